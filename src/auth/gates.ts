/**
 * The one gate engine. Every REST operation, GraphQL field and WebSocket channel declares its
 * gate in spec/; codegen turns the declarations into tables and this engine evaluates them. It
 * answers with a refusal (code and message) that each transport renders: REST and GraphQL throw
 * it as AppError (`enforce`), the WebSocket answers with an `error` message. Order everywhere:
 * auth kind (or channel gate kind), then permission, then feature flag.
 * Owns the codes and order of gate refusals; must not look anything up itself: feature flags, the
 * owning account of a channel's resource and resource grants come in as inputs.
 *
 * A gate may declare a resource grant (`x-resource-grant`, `@gate(resourceGrant: ...)`): a caller
 * missing the permission passes when the module owning the resource says it holds that grant on
 * the resource the operation's `id` names (or, for a list, on any of the account's). The refusal
 * without either is the permission's own, so a grant changes who passes, never what a refusal says.
 */
import type { Gate } from '../../generated/gates';
import type { ChannelGateKind, ChannelSpec } from '../../generated/ws';
import { AppError, messages, type ErrorCode } from '../errors';
import { hasPermission, isFirstParty, type AuthContext } from './context';

/** Answers whether a feature flag is on for the caller (global kill-switch, plan, overrides). */
export interface FeatureChecker {
  isEnabled(key: string, ctx: AuthContext): Promise<boolean>;
}

/**
 * Answers whether the caller holds a declared resource grant (`widget-access:viewer`) on the
 * resource `resourceId` names, or with null on any resource of its active account (a list).
 * Supplied by the module that owns the resource and its grants; an unknown grant answers false.
 */
export interface ResourceGrantChecker {
  holds(grant: string, resourceId: string | null, ctx: AuthContext): Promise<boolean>;
}

/**
 * The resource grants of several owning modules as one checker: a grant is held when any module
 * says so (each answers false for the grants it does not own).
 */
export function anyResourceGrant(...checkers: readonly ResourceGrantChecker[]): ResourceGrantChecker {
  return {
    async holds(grant, resourceId, ctx) {
      for (const checker of checkers) if (await checker.holds(grant, resourceId, ctx)) return true;
      return false;
    },
  };
}

/** The resource an operation names, for its gate's resource grant: the `id` path parameter or argument. */
export interface GateTarget {
  /** As the request carried it (not yet validated): anything but a string fails the grant closed. */
  id?: unknown;
}

/** Why a gate refused, in the spec's words; transports render it, the engine never throws it. */
export interface GateRefusal<Code extends ErrorCode = ErrorCode> {
  code: Code;
  message: string;
}

/** WebSocket channels refuse with UNAUTHORIZED or FEATURE_DISABLED only (Part 2, "Errors"). */
export type ChannelRefusal = GateRefusal<'UNAUTHORIZED' | 'FEATURE_DISABLED'>;

/** The refusal as the AppError REST and GraphQL throw: the same code and message on both. */
export function refusalError(refusal: GateRefusal): AppError {
  return new AppError(refusal.code, refusal.message);
}

export function authKindRefusal(gate: Gate, ctx: AuthContext): GateRefusal | null {
  if (gate.auth === 'public') return null;
  if (ctx.kind === 'anonymous') return { code: 'UNAUTHORIZED', message: messages.authenticationRequired };
  switch (gate.auth) {
    case 'authenticated':
      return null;
    case 'user':
      // Only the user themself (session or own API key); other contexts count as unauthenticated.
      return isFirstParty(ctx) ? null : { code: 'UNAUTHORIZED', message: messages.authenticationRequired };
    case 'first-party':
      return isFirstParty(ctx) ? null : { code: 'FORBIDDEN', message: messages.firstPartyOnly };
    case 'system-key':
      return ctx.kind === 'system_key' ? null : { code: 'FORBIDDEN', message: messages.systemKeyOnly };
    case 'popout-session':
      return ctx.kind === 'popout' ? null : { code: 'FORBIDDEN', message: messages.popoutSessionOnly };
    case 'developer':
      return ctx.kind === 'developer_api_key' || isFirstParty(ctx) ? null : { code: 'FORBIDDEN', message: messages.developerOnly };
    case 'extension':
      // The extension's own surface (its install's secrets): its `lm_ext_` token only.
      return ctx.kind === 'extension' ? null : { code: 'FORBIDDEN', message: messages.extensionTokenOnly };
  }
}

export function permissionRefusal(gate: Gate, ctx: AuthContext): GateRefusal | null {
  const required = gate.permissions;
  if (!required) return null;
  // Account-scope checks use the role in the active account; without one there is nothing to check.
  if (required.scope === 'account' && ctx.kind !== 'system_key' && ctx.kind !== 'developer_api_key' && ctx.accountId === null) {
    return { code: 'UNAUTHORIZED', message: messages.noActiveAccount };
  }
  const held = (permission: string) => hasPermission(ctx, permission, required.scope);
  if (required.mode === 'any') {
    return required.list.some(held) ? null : { code: 'FORBIDDEN', message: messages.missingPermission(required.list[0]!) };
  }
  const missing = required.list.find((p) => !held(p));
  return missing ? { code: 'FORBIDDEN', message: messages.missingPermission(missing) } : null;
}

/** Resolves the account that owns a channel's resource from one placeholder; null fails closed. */
export type AccountResolver = (params: Record<string, string>) => Promise<string | null>;

/** Resolvers by placeholder name (`install_id`, `resource_channel`, ...); `account_id` is built in. */
export type AccountResolvers = Partial<Record<string, AccountResolver>>;

/**
 * Answers whether the caller owns a channel's resource (the `ExtensionOwner` gate kind: the
 * developer profile or team behind `ext-logs:{extension_id}`), from one placeholder; a module
 * supplies it, and a channel without one fails closed.
 */
export type OwnerCheck = (params: Record<string, string>, ctx: AuthContext) => Promise<boolean>;

/** Owner checks by placeholder name (`extension_id`, ...). */
export type OwnerChecks = Partial<Record<string, OwnerCheck>>;

/** A channel as the engine sees it: the name the client sent, its declared gate and its placeholders. */
export interface ChannelTarget {
  name: string;
  spec: Pick<ChannelSpec, 'gate' | 'feature' | 'broadcastPermission'>;
  params: Record<string, string>;
}

export interface ChannelCheck {
  /** A subscribe passes the gate kind and the feature flag; a broadcast also needs the write permission. */
  action: 'subscribe' | 'broadcast';
  accountResolvers?: AccountResolvers;
  ownerChecks?: OwnerChecks;
}

export interface GateEnforcer {
  /**
   * The refusal of an operation gate (REST operation, GraphQL field), or null when the caller
   * passes; `target` names the resource a declared resource grant is checked on.
   */
  evaluate(gate: Gate, ctx: AuthContext, target?: GateTarget): Promise<GateRefusal | null>;
  /** `evaluate`, rendered for REST and GraphQL: throws the refusal as AppError. */
  enforce(gate: Gate, ctx: AuthContext, target?: GateTarget): Promise<void>;
  /** The refusal of a channel gate: the gate kind, then the channel's feature flag, then (broadcast) the write permission. */
  evaluateChannel(target: ChannelTarget, ctx: AuthContext, check: ChannelCheck): Promise<ChannelRefusal | null>;
}

/**
 * An extension token opens its own install's storage channel without `extension-store:read`; the
 * account channels whose permission its install granted it opens through `hasPermission`.
 */
function extensionGrant(ctx: AuthContext, params: Record<string, string>): boolean {
  return ctx.kind === 'extension' && params.install_id !== undefined && params.install_id === ctx.binding?.installId;
}

export function createGateEnforcer(features: FeatureChecker, grants?: ResourceGrantChecker): GateEnforcer {
  /** The permission refusal, unless the gate's resource grant, held on the target, stands in for it. */
  async function permissionOrGrant(gate: Gate, ctx: AuthContext, target: GateTarget | undefined): Promise<GateRefusal | null> {
    const refusal = permissionRefusal(gate, ctx);
    const declared = gate.resourceGrant;
    if (refusal?.code !== 'FORBIDDEN' || !declared || !grants) return refusal;
    const id = target?.id;
    if (declared.on === 'id' && typeof id !== 'string') return refusal;
    return (await grants.holds(declared.grant, declared.on === 'id' ? (id as string) : null, ctx)) ? null : refusal;
  }

  async function featureRefusal(feature: string | null, ctx: AuthContext): Promise<GateRefusal<'FEATURE_DISABLED'> | null> {
    if (!feature || (await features.isEnabled(feature, ctx))) return null;
    return { code: 'FEATURE_DISABLED', message: messages.featureDisabled(feature) };
  }

  async function owningAccount(params: Record<string, string>, resolvers: AccountResolvers | undefined): Promise<string | null> {
    if (params.account_id) return params.account_id;
    for (const [name, value] of Object.entries(params)) {
      const resolve = resolvers?.[name];
      if (resolve) return resolve({ [name]: value });
    }
    return null;
  }

  /** Access to the account that owns the channel: its member context, or a system key. */
  async function accountAccess(ctx: AuthContext, params: Record<string, string>, resolvers: AccountResolvers | undefined): Promise<boolean> {
    if (ctx.kind === 'anonymous') return false;
    const account = await owningAccount(params, resolvers);
    if (account === null) return false;
    return ctx.kind === 'system_key' || ctx.accountId === account;
  }

  /** Whether the channel's gate kind lets the caller in; PublicWhenFeature answers with its own refusal. */
  async function channelKind(target: ChannelTarget, ctx: AuthContext, resolvers: AccountResolvers | undefined, owners?: OwnerChecks): Promise<boolean | ChannelRefusal> {
    const gate = target.spec.gate;
    const kind: ChannelGateKind = gate.kind;
    switch (kind) {
      case 'Public':
        return true;
      case 'PublicWhenFeature':
        return (await featureRefusal(gate.flag!, ctx)) ?? true;
      case 'Authenticated':
        return ctx.kind !== 'anonymous';
      case 'Permission':
        return (await accountAccess(ctx, target.params, resolvers)) && (hasPermission(ctx, gate.permission!) || extensionGrant(ctx, target.params));
      case 'AccountScoped':
        return accountAccess(ctx, target.params, resolvers);
      case 'UserPermission':
        return hasPermission(ctx, gate.permission!, 'user');
      case 'OverlayToken':
        // An overlay or shared overlay token bound to the overlay the channel names; the feature
        // flag that follows is checked against the token's account.
        return (ctx.kind === 'overlay' || ctx.kind === 'shared_overlay') && Boolean(ctx.binding?.overlayId) && ctx.binding?.overlayId === target.params.key;
      case 'WidgetToken':
        return ctx.kind === 'widget' && Boolean(ctx.binding?.widgetInstanceId) && ctx.binding?.widgetInstanceId === target.params.widget_instance_id;
      case 'ExtensionOwner': {
        // Bound to developer rows a later module owns: its owner check decides; none fails closed.
        if (ctx.kind === 'anonymous') return false;
        const placeholder = Object.keys(target.params).find((name) => owners?.[name]);
        return placeholder ? owners![placeholder]!({ [placeholder]: target.params[placeholder]! }, ctx) : false;
      }
      case 'OwnUser':
        // The signed-in user's own channel: a user session (first-party), never a key or a token.
        return ctx.kind === 'jwt' && ctx.userId !== null && ctx.userId === target.params.user_id;
      case 'Unknown':
        return false;
      default: {
        const unhandled: never = kind;
        throw new Error(`unhandled channel gate kind ${String(unhandled)}`);
      }
    }
  }

  const engine: GateEnforcer = {
    async evaluate(gate, ctx, target) {
      return authKindRefusal(gate, ctx) ?? (await permissionOrGrant(gate, ctx, target)) ?? (await featureRefusal(gate.feature, ctx));
    },
    async enforce(gate, ctx, target) {
      const refusal = await engine.evaluate(gate, ctx, target);
      if (refusal) throw refusalError(refusal);
    },
    async evaluateChannel(target, ctx, check) {
      const admitted = await channelKind(target, ctx, check.accountResolvers, check.ownerChecks);
      if (admitted === false) return { code: 'UNAUTHORIZED', message: messages.notAuthorizedToSubscribe(target.name) };
      if (admitted !== true) return admitted;
      const featureOff = await featureRefusal(target.spec.feature, ctx);
      if (featureOff) return featureOff;
      if (check.action === 'broadcast') {
        const permission = target.spec.broadcastPermission;
        if (!permission || !hasPermission(ctx, permission)) return { code: 'UNAUTHORIZED', message: messages.notAuthorizedToBroadcast(target.name) };
      }
      return null;
    },
  };
  return engine;
}
