/** Messages of the sign-in flow. */
export const signinMessages = {
  redirectNotAllowed: 'redirect_uri is not allowed',
  flowMissing: 'Sign-in expired or not started here',
  invalidLoginCode: 'Invalid or expired login code',
  providerNotFound: (slug: string) => `Unknown sign-in provider: ${slug}`,
  connectionNotFound: 'Connection not found',
  publicUrlRequired: 'auth.public_url is required to sign in with a provider',
} as const;
