/** The plans module's messages (Part 1 "Plan rules" and "Errors" quote the first ones). */
export const planMessages = {
  invalidSlug: 'Invalid slug format',
  slugInUse: 'Plan slug already in use',
  negativePrice: 'Price cannot be negative',
  negativeLimit: 'Limit cannot be negative',
  planNotFound: 'Plan not found',
  planInUse: (n: number) => `Cannot delete plan: ${n} account(s) still reference it. Migrate them to a different plan first.`,
  notInteger: (field: string) => `${field} must be an integer`,
  flagNotFound: 'Feature flag not found',
  notAccountFeature: 'Feature flag is not an account feature',
  accountNotFound: 'Account not found',
  userNotFound: 'User not found',
  nameBlank: 'name must not be blank',
} as const;
