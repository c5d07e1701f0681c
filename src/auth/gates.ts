/**
 * The generic gate engine: every REST operation, GraphQL field and WebSocket channel declares its
 * gate in spec/, codegen turns that into tables, and this one function enforces it, so REST and
 * GraphQL fail identically. Order: auth kind, then permission, then feature flag.
 */
import type { Gate } from '../../generated/gates';
import { AppError, messages } from '../errors';
import { hasPermission, isFirstParty, type AuthContext } from './context';

/** Answers whether a feature flag is on for the caller (global kill-switch, plan, overrides). */
export interface FeatureChecker {
  isEnabled(key: string, ctx: AuthContext): Promise<boolean>;
}

export function checkAuthKind(gate: Gate, ctx: AuthContext): void {
  if (gate.auth === 'public') return;
  if (ctx.kind === 'anonymous') throw AppError.unauthorized();
  switch (gate.auth) {
    case 'authenticated':
      return;
    case 'user':
      // Only the user themself (session or own API key); other contexts count as unauthenticated.
      if (!isFirstParty(ctx)) throw AppError.unauthorized();
      return;
    case 'first-party':
      if (!isFirstParty(ctx)) throw AppError.forbidden(messages.firstPartyOnly);
      return;
    case 'system-key':
      if (ctx.kind !== 'system_key') throw AppError.forbidden(messages.systemKeyOnly);
      return;
    case 'popout-session':
      if (ctx.kind !== 'popout') throw AppError.forbidden(messages.popoutSessionOnly);
      return;
    case 'developer':
      if (ctx.kind !== 'developer_api_key' && !isFirstParty(ctx)) throw AppError.forbidden(messages.developerOnly);
      return;
  }
}

export function checkPermissions(gate: Gate, ctx: AuthContext): void {
  const required = gate.permissions;
  if (!required) return;
  // Account-scope checks use the role in the active account; without one there is nothing to check.
  if (required.scope === 'account' && ctx.kind !== 'system_key' && ctx.kind !== 'developer_api_key' && ctx.accountId === null) {
    throw AppError.unauthorized(messages.noActiveAccount);
  }
  const held = (permission: string) => hasPermission(ctx, permission, required.scope);
  if (required.mode === 'any') {
    if (!required.list.some(held)) throw AppError.forbidden(messages.missingPermission(required.list[0]!));
    return;
  }
  const missing = required.list.find((p) => !held(p));
  if (missing) throw AppError.forbidden(messages.missingPermission(missing));
}

export interface GateEnforcer {
  enforce(gate: Gate, ctx: AuthContext): Promise<void>;
}

export function createGateEnforcer(features: FeatureChecker): GateEnforcer {
  return {
    async enforce(gate, ctx) {
      checkAuthKind(gate, ctx);
      checkPermissions(gate, ctx);
      if (gate.feature && !(await features.isEnabled(gate.feature, ctx))) {
        throw new AppError('FEATURE_DISABLED', messages.featureDisabled(gate.feature));
      }
    },
  };
}
