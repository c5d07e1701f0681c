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
  cannotDeleteSelf: 'You cannot delete yourself',
  cannotDeleteSystemAdmin: 'Cannot delete a system admin: take away their admin roles first',
  ownsSharedAccounts: (n: number) => `Cannot delete user: they own ${n} account(s) with other members. Dissolve those accounts or remove their members first.`,
  accountSuspended: 'Account suspended',
  userSuspended: 'User is suspended',
} as const;
