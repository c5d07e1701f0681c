/**
 * Credentials as seen by their holder: the caller's effective permissions. A scoped credential
 * reports exactly the grants it carries, never a wildcard it does not literally hold.
 */
import type { AuthContext, AuthContextKind } from '../../auth/context';
import { AppError } from '../../errors';

export interface TokenPermissions {
  context: Exclude<AuthContextKind, 'anonymous'>;
  userId: string | null;
  accountId: string | null;
  permissions: string[];
  adminPermissions: string[];
  userPermissions: string[];
}

const sorted = (set: ReadonlySet<string>) => [...set].sort();

export function createTokensService() {
  return {
    myPermissions(ctx: AuthContext): TokenPermissions {
      if (ctx.kind === 'anonymous') throw AppError.unauthorized();
      return {
        context: ctx.kind,
        userId: ctx.userId,
        accountId: ctx.accountId,
        permissions: sorted(ctx.permissions),
        adminPermissions: sorted(ctx.adminPermissions),
        userPermissions: sorted(ctx.userPermissions),
      };
    },
  };
}

export type TokensService = ReturnType<typeof createTokensService>;
