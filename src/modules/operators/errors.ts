/** The operators module's messages. */
export const operatorMessages = {
  userNotFound: 'User not found',
  accountNotFound: 'Account not found',
  userRoleNotFound: 'User role not found',
  userAlreadySuspended: 'User is already suspended',
  userNotSuspended: 'User is not suspended',
  accountAlreadySuspended: 'Account is already suspended',
  accountNotSuspended: 'Account is not suspended',
  cannotSuspendSelf: 'You cannot suspend yourself',
  accountSuspended: 'Account suspended',
  userSuspended: 'User is suspended',
} as const;
