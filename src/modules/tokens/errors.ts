/** The tokens module's error messages. */
export const tokenMessages = {
  expiresInPast: 'expires_at cannot be in the past',
  invalidExpiry: 'expires_at must be an RFC 3339 timestamp',
  popoutNotFound: 'Popout token not found',
  memberNotFound: 'Member not found',
} as const;
