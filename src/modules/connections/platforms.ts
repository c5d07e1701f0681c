/**
 * The supported platforms and their OAuth credential modes (Part 1 "PlatformCredentialMode"):
 * the configured intent per platform and kind; pairs without an OAuth mode are absent. The
 * channel platforms are the ones a ConnectionStatus is reported for; the music platform is an
 * integration with per-account credentials only.
 */
export type ChannelPlatform = 'platform_a' | 'platform_b' | 'platform_c';
export type CredentialKind = 'channel' | 'bot';
export type CredentialMode = 'system' | 'account';

export const channelPlatforms: readonly ChannelPlatform[] = ['platform_a', 'platform_b', 'platform_c'];

export const credentialModes: readonly { platform: string; kind: CredentialKind; mode: CredentialMode }[] = [
  { platform: 'platform_a', kind: 'channel', mode: 'system' },
  { platform: 'platform_a', kind: 'bot', mode: 'system' },
  { platform: 'platform_b', kind: 'channel', mode: 'system' },
  { platform: 'platform_c', kind: 'channel', mode: 'system' },
  { platform: 'platform_c', kind: 'bot', mode: 'account' },
  { platform: 'music_platform', kind: 'channel', mode: 'account' },
];

export type ConnectionType = 'login' | 'channel' | 'bot';
export const allPlatforms = ['platform_a', 'platform_b', 'platform_c', 'music_platform'] as const;
export type Platform = (typeof allPlatforms)[number];

/** The connection types each platform offers; the music platform is an integration (channel only). */
export const platformTypes: Readonly<Record<Platform, readonly ConnectionType[]>> = {
  platform_a: ['login', 'channel', 'bot'],
  platform_b: ['login', 'channel'],
  platform_c: ['login', 'channel', 'bot'],
  music_platform: ['channel'],
};
export const integrationPlatforms: ReadonlySet<string> = new Set(['music_platform']);

/** Platforms whose chat is sent as the acting user through a login grant (platform_b sends through the channel connection). */
export const loginSendPlatforms: ReadonlySet<string> = new Set(['platform_a', 'platform_c']);
