/**
 * What a caller may hand on (to a role, a popout token, a key): one check shared by every module
 * that grants permissions, so the same request gets the same answer wherever it is made.
 */
import { AppError } from '../errors';
import { hasPermission, type AuthContext } from './context';
import { firstInvalidAccountPermission, sortByRegistry } from './registry';

export const grantMessages = {
  invalidPermission: (p: string) => `Invalid permission: ${p}`,
  cannotGrant: (p: string) => `Cannot grant permissions you do not hold: ${p}`,
} as const;

/**
 * Literal account permissions of the registry (400 otherwise) that the caller holds itself (403
 * otherwise). Answers them deduplicated in registry order.
 */
export function checkGrantable(ctx: AuthContext, permissions: readonly string[]): string[] {
  const invalid = firstInvalidAccountPermission(permissions);
  if (invalid !== null) throw AppError.validation(grantMessages.invalidPermission(invalid));
  const beyond = permissions.find((p) => !hasPermission(ctx, p));
  if (beyond) throw AppError.forbidden(grantMessages.cannotGrant(beyond));
  return sortByRegistry([...new Set(permissions)]);
}
