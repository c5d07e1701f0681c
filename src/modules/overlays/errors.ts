/** The overlays module's error messages. */
export const overlayMessages = {
  overlayNotFound: 'Overlay not found',
  widgetNotFound: 'Widget not found',
  tokenNotFound: 'Token not found',
  accessNotFound: 'Access entry not found',
  accessExists: 'Access already granted',
  notMember: 'User is not a member of this account',
  expiresInPast: 'expires_at cannot be in the past',
  invalidName: 'name must be 1 to 100 characters',
  invalidType: 'type must be 1 to 50 lowercase letters, digits, _ or - (starting with a letter or digit)',
  invalidVersion: 'version must be a positive integer',
  invalidSettings: (max: number) => `settings must be a JSON object of at most ${max} bytes`,
  staleVersion: (kind: 'Overlay' | 'Widget', current: number) => `${kind} was changed by someone else: reload it (current version ${current})`,
} as const;
