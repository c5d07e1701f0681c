/** The apikeys module's error messages (Part 1 quotes `Invalid permission: <perm>` and the expiry one). */
export const apiKeyMessages = {
  invalidPermission: (p: string) => `Invalid permission: ${p}`,
  cannotGrant: (p: string) => `Cannot grant permissions you do not hold: ${p}`,
  ownerCannotHold: (p: string) => `Cannot grant permissions the key owner does not hold: ${p}`,
  labelRequired: 'Label is required',
  expiresInPast: 'expires_at cannot be in the past',
  invalidExpiry: 'expires_at must be an RFC 3339 timestamp',
  invalidKind: (kind: string) => `Invalid key kind: ${kind}`,
  apiKeyNotFound: 'API key not found',
  serviceKeyNotFound: 'Service key not found',
  systemKeyNotFound: 'System key not found',
} as const;
