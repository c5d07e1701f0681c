/**
 * The channel map of spec/ws-protocol/ at run time: matching a channel name to its pattern,
 * the subscribe and broadcast checks (evaluated by the one gate engine in auth/gates.ts), and the
 * relay between internal bus channels and sockets, read from the generated relay table (Part 2,
 * "Authentication" and "Events"). Owns no gate rule and no relay row of its own: both come from
 * the spec. Presence channels resolve their account through the wrapped channel; kinds whose
 * binding lives in a later module (extension owners, install resolution) fail closed until that
 * module supplies a resolver.
 */
import { channels, relays, type ChannelRelay, type ChannelSpec, type WsServerMessage } from '../../generated/ws';
import * as validators from '../../generated/ws-validators';
import type { WsValidator } from '../../generated/ws-validators';
import type { AuthContext } from '../auth/context';
import type { AccountResolver, ChannelRefusal, GateEnforcer, OwnerCheck } from '../auth/gates';

export type { AccountResolver, ChannelRefusal, OwnerCheck };

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

/** A name that matches no pattern has the Unknown gate kind, which always refuses. */
function unknownChannel(name: string): MatchedChannel {
  return { name, spec: { pattern: name, gate: { kind: 'Unknown' }, feature: null, broadcastPermission: null, relay: null, messages: [] }, params: {} };
}

export interface ChannelGateDeps {
  /** The one gate engine REST and GraphQL use too. */
  gates: GateEnforcer;
  /** Resolvers by placeholder name (`install_id`, `resource_channel`, ...); `account_id` is built in. */
  accountResolvers?: Readonly<Partial<Record<string, AccountResolver>>>;
  /** Owner checks by placeholder name (`extension_id`: the ExtensionOwner gate kind), supplied by modules. */
  ownerChecks?: Readonly<Partial<Record<string, OwnerCheck>>>;
}

type CheckResult = Promise<{ channel: MatchedChannel } | { refusal: ChannelRefusal }>;

export function createChannelGate(deps: ChannelGateDeps) {
  const { gates } = deps;

  /**
   * The account of a presence channel's wrapped resource: the wrapped channel's `account_id`, or
   * the module resolver of its placeholder (overlay, widget, install). A wrapped presence
   * channel, an unknown one or one without an owner fails closed (null).
   */
  const resourceChannel: AccountResolver = async (params) => {
    const wrapped = matchChannel(params.resource_channel ?? '');
    if (!wrapped || wrapped.spec.pattern.startsWith('presence:')) return null;
    if (wrapped.params.account_id) return wrapped.params.account_id;
    for (const [placeholder, value] of Object.entries(wrapped.params)) {
      const resolve = deps.accountResolvers?.[placeholder];
      if (resolve) return resolve({ [placeholder]: value });
    }
    return null;
  };

  async function run(name: string, ctx: AuthContext, action: 'subscribe' | 'broadcast'): CheckResult {
    const channel = matchChannel(name) ?? unknownChannel(name);
    // Read at check time: the fold completes the module resolvers after this gate is built.
    const accountResolvers = { ...deps.accountResolvers, resource_channel: resourceChannel };
    const refusal = await gates.evaluateChannel(channel, ctx, { action, accountResolvers, ownerChecks: deps.ownerChecks });
    return refusal ? { refusal } : { channel };
  }

  return {
    /** Subscribe-time check: the gate kind first, then the channel's feature flag. */
    check: (name: string, ctx: AuthContext): CheckResult => run(name, ctx, 'subscribe'),
    /** Client broadcast: the subscribe gate plus the channel's write permission. */
    checkBroadcast: (name: string, ctx: AuthContext): CheckResult => run(name, ctx, 'broadcast'),
  };
}

export type ChannelGate = ReturnType<typeof createChannelGate>;

/** Internal bus channel that feeds a socket channel (the spec's relay `bus`); null when nothing is relayed to it. */
export function busChannelFor(channel: string): string | null {
  const matched = matchChannel(channel);
  const relay = matched?.spec.relay;
  if (!matched || !relay) return null;
  return relay.bus.replace(/\{([a-z_]+)\}/g, (_all, name: string) => matched.params[name] ?? '');
}

/**
 * Wraps a bus message for the sockets of `channel`, by the relay row of the bus channel's family.
 * The legacy form carries the publisher's JSON as `data`; the lifted form lifts `event_type` (or
 * `type`) out of the payload, falling back to the row's default, and forwards its `data`.
 * `cursor` is the frame's position in its channel (src/realtime/resume.ts), when it has one.
 * Returns null for a message that is not JSON.
 */
export function relayEnvelope(busChannel: string, socketChannel: string, message: string, cursor?: string | null): WsServerMessage | null {
  let payload: unknown;
  try {
    payload = JSON.parse(message);
  } catch {
    return null;
  }
  const relay = relays[busChannel.slice(0, busChannel.indexOf(':'))];
  const at = cursor ? { cursor } : {};
  if (relay?.form === 'legacy') return withKind(relay, { type: relay.envelope, data: payload, ...at });
  const body = (payload ?? {}) as { event_type?: unknown; type?: unknown; data?: unknown };
  const eventType = typeof body.event_type === 'string' ? body.event_type : typeof body.type === 'string' ? body.type : relay?.eventTypeDefault;
  return {
    type: relay?.envelope ?? 'event',
    channel: socketChannel,
    ...(eventType ? { event_type: eventType } : {}),
    data: body.data ?? null,
    ...at,
  } as WsServerMessage;
}

const validatorOf = (message: string) => (validators as unknown as Record<string, WsValidator<unknown>>)[`validate${message[0]!.toUpperCase()}${message.slice(1)}`];

/**
 * A legacy family's frame with its discriminant (the relay row's `discriminant`): the kind of the
 * first of the family's messages whose schema the frame validates against (events:{account_id}: a
 * stored, test or bot event whose data is an Event, then a notice of the service, then a client
 * broadcast), so every frame of the family says which message it is.
 */
function withKind(relay: ChannelRelay, frame: Record<string, unknown>): WsServerMessage {
  const discriminant = relay.discriminant;
  if (!discriminant) return frame as WsServerMessage;
  const { type, data, ...rest } = frame;
  for (const { kind, message } of discriminant.kinds) {
    const candidate = { type, [discriminant.member]: kind, data, ...rest };
    if (validatorOf(message)?.(candidate)) return candidate as WsServerMessage;
  }
  // No message takes it (a cursor the schema refuses, say): the family's last, most open kind.
  const last = discriminant.kinds[discriminant.kinds.length - 1];
  return { type, ...(last ? { [discriminant.member]: last.kind } : {}), data, ...rest } as WsServerMessage;
}
