/** The connections module's messages. */
export const connectionMessages = {
  accountNotFound: 'Account not found',
  userNotFound: 'User not found',
  loginConnectionNotFound: 'Login connection not found',
  loginAssignmentNotFound: 'Login assignment not found',
  notAMember: 'User is not a member of the account',
  userRequired: 'userId is required without a user context',
} as const;
