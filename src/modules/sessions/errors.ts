/** The sessions module's error messages. */
export const sessionMessages = {
  invalidRefresh: 'Invalid or expired refresh token',
  invalidPopout: 'Invalid or expired popout token',
  sessionNotFound: 'Session not found',
  accountNotFound: 'Account not found',
  switchNeedsSession: 'Switching accounts requires a user session',
} as const;
