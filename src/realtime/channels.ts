/**
 * The channel map from spec/ws-protocol.json: matching a channel name to its pattern, the
 * subscribe-time gate of each kind, and the relay envelopes between internal bus channels and
 * sockets (Part 2, "Authentication" and "Events"). Kinds whose binding lives in a later module
 * (overlay, widget and extension tokens, install and presence resolution) fail closed here until
 * that module supplies a resolver.
 */
import { channels, type ChannelSpec, type WsServerMessage } from '../../generated/ws';
import { hasPermission, type AuthContext } from '../auth/context';
import type { FeatureChecker } from '../auth/gates';
import { messages } from '../errors';

export interface MatchedChannel {
  name: string;
  spec: ChannelSpec;
  params: Record<string, string>;
}

const compiled = channels.map((spec) => {
  const names: string[] = [];
  const source = spec.pattern
    .split(/(\{[a-z_]+\})/)
    .map((part) => {
      const placeholder = /^\{([a-z_]+)\}$/.exec(part);
      if (!placeholder) return part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
      names.push(placeholder[1]!);
      // A wrapped channel name (presence:{resource_channel}) may itself hold colons.
      return placeholder[1]!.endsWith('_channel') ? '(.+)' : '([^:]+)';
    })
    .join('');
  return { spec, names, re: new RegExp(`^${source}$`) };
});

export function matchChannel(name: string): MatchedChannel | null {
  for (const { spec, names, re } of compiled) {
    const m = re.exec(name);
    if (m) return { name, spec, params: Object.fromEntries(names.map((n, i) => [n, m[i + 1]!])) };
  }
  return null;
}

export interface ChannelRefusal {
  code: 'UNAUTHORIZED' | 'FEATURE_DISABLED';
  message: string;
}

/** Resolves the account that owns a channel's resource; null fails closed. */
export type AccountResolver = (params: Record<string, string>) => Promise<string | null>;

export interface ChannelGateDeps {
  features: FeatureChecker;
  /** Resolvers by placeholder name (`install_id`, `resource_channel`, ...); `account_id` is built in. */
  accountResolvers?: Partial<Record<string, AccountResolver>>;
}

const notAuthorized = (channel: string): ChannelRefusal => ({ code: 'UNAUTHORIZED', message: `Not authorized to subscribe to ${channel}` });

export function createChannelGate(deps: ChannelGateDeps) {
  async function owningAccount(params: Record<string, string>): Promise<string | null> {
    if (params.account_id) return params.account_id;
    for (const [name, value] of Object.entries(params)) {
      const resolve = deps.accountResolvers?.[name];
      if (resolve) return resolve({ [name]: value });
    }
    return null;
  }

  async function accountAccess(ctx: AuthContext, params: Record<string, string>): Promise<boolean> {
    if (ctx.kind === 'anonymous') return false;
    const account = await owningAccount(params);
    if (account === null) return false;
    return ctx.kind === 'system_key' || ctx.accountId === account;
  }

  async function passesGate(channel: MatchedChannel, ctx: AuthContext): Promise<ChannelRefusal | null> {
    const gate = channel.spec.gate;
    switch (gate.kind) {
      case 'Public':
        return null;
      case 'PublicWhenFeature':
        return (await deps.features.isEnabled(gate.flag!, ctx)) ? null : { code: 'FEATURE_DISABLED', message: messages.featureDisabled(gate.flag!) };
      case 'Authenticated':
        return ctx.kind === 'anonymous' ? notAuthorized(channel.name) : null;
      case 'Permission':
        return (await accountAccess(ctx, channel.params)) && hasPermission(ctx, gate.permission!) ? null : notAuthorized(channel.name);
      case 'AccountScoped':
        return (await accountAccess(ctx, channel.params)) ? null : notAuthorized(channel.name);
      case 'UserPermission':
        return hasPermission(ctx, gate.permission!, 'user') ? null : notAuthorized(channel.name);
      default:
        // OverlayToken, WidgetToken, ExtensionOwner bind to rows a later module owns; Unknown always refuses.
        return notAuthorized(channel.name);
    }
  }

  return {
    /** Subscribe-time check: the gate kind first, then the channel's feature flag. */
    async check(name: string, ctx: AuthContext): Promise<{ channel: MatchedChannel } | { refusal: ChannelRefusal }> {
      const channel = matchChannel(name);
      if (!channel) return { refusal: notAuthorized(name) };
      const refusal = await passesGate(channel, ctx);
      if (refusal) return { refusal };
      if (channel.spec.feature && !(await deps.features.isEnabled(channel.spec.feature, ctx))) {
        return { refusal: { code: 'FEATURE_DISABLED', message: messages.featureDisabled(channel.spec.feature) } };
      }
      return { channel };
    },
    /** Client broadcast: the subscribe gate plus the channel's write permission. */
    async checkBroadcast(name: string, ctx: AuthContext): Promise<{ channel: MatchedChannel } | { refusal: ChannelRefusal }> {
      const result = await this.check(name, ctx);
      if ('refusal' in result) return result;
      const permission = result.channel.spec.broadcastPermission;
      if (!permission || !hasPermission(ctx, permission)) {
        return { refusal: { code: 'UNAUTHORIZED', message: `Not authorized to broadcast on ${name}` } };
      }
      return result;
    },
  };
}

export type ChannelGate = ReturnType<typeof createChannelGate>;

/** Internal bus channel for a socket channel; null when the family is not relayed. */
export function busChannelFor(channel: string): string | null {
  const family = channel.slice(0, channel.indexOf(':'));
  if (family === 'music_platform') return `music:${channel.slice('music_platform:'.length)}`;
  return relayedFamilies.has(family) ? channel : null;
}

const legacyEnvelopes: Record<string, WsServerMessage['type']> = {
  events: 'event',
  music: 'music_platform:now-playing',
  chat: 'chat:message',
  automations: 'automation',
};
const liftedDefaults: Record<string, string | null> = {
  overlay: 'overlay:update',
  widget: 'widget:update',
  'ext-storage': 'storage:update',
  sounds: null,
  history: null,
};
const relayedFamilies = new Set(['events', 'chat', 'automations', ...Object.keys(liftedDefaults)]);

/**
 * Wraps a bus message for the sockets of `channel`. The four legacy families carry the publisher's
 * JSON as `data`; the others lift `event_type` (or `type`) out of the payload and forward its `data`.
 * Returns null for a message that is not JSON.
 */
export function relayEnvelope(busChannel: string, socketChannel: string, message: string): WsServerMessage | null {
  let payload: unknown;
  try {
    payload = JSON.parse(message);
  } catch {
    return null;
  }
  const family = busChannel.slice(0, busChannel.indexOf(':'));
  const legacy = legacyEnvelopes[family];
  if (legacy) return { type: legacy, data: payload } as WsServerMessage;
  const body = (payload ?? {}) as { event_type?: unknown; type?: unknown; data?: unknown };
  const eventType = typeof body.event_type === 'string' ? body.event_type : typeof body.type === 'string' ? body.type : liftedDefaults[family];
  return {
    type: 'event',
    channel: socketChannel,
    ...(eventType ? { event_type: eventType } : {}),
    data: body.data ?? null,
  };
}
