/** The stats module's error messages (Part 2, "Public statistics", "Watchlist"; clients may show them). */
export const statsMessages = {
  unsupportedPlatform: (platform: string) => `Unsupported platform: ${platform}`,
  unsupportedProvider: (provider: string) => `Unsupported provider: ${provider}`,
  invalidRange: 'range must be one of DAYS_30, DAYS_90, DAYS_180, DAYS_365',
  invalidMetric: 'metric must be one of watchtime, viewers, peak, follower_gain, messages, recent',
  invalidAnimated: 'animated must be true or false',
  invalidOffset: 'offset must be >= 0',
  channelNotFound: 'Channel not found',
  streamNotFound: 'Stream not found',
  watchlistFull: (cap: number) => `Watchlist limit of ${cap} channels reached`,
  unknownChannel: (platform: string, id: string) => `Unknown channel: ${platform}/${id}`,
  noChannelConnected: (platform: string) => `No channel connected on ${platform}`,
  sampleOutOfRange: (at: string) => `Sample time out of range: ${at}`,
} as const;
