/** The overlays module's error messages. */
export const overlayMessages = {
  overlayNotFound: 'Overlay not found',
  widgetNotFound: 'Widget not found',
  tokenNotFound: 'Token not found',
  accessNotFound: 'Access entry not found',
  accessExists: 'Access already granted',
  notMember: 'User is not a member of this account',
  expiresInPast: 'expires_at cannot be in the past',
} as const;
