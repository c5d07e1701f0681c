/**
 * Resumable channels (spec/ws-protocol/, "Resume"): the cursor every relayed frame carries,
 * and the replay after a client's `since`.
 *
 * Two sources, by the relay row's `resume`:
 * - `stored` (events:{account_id}): the cursor is the event's position in the events table,
 *   `e:<created_at ms>:<id>`, computed from the frame's own data, so every node gives the same one
 *   without coordination; replay reads the stored rows after it.
 * - `buffer` (every other relayed family): the publisher appends each message to a bounded
 *   per-channel log and publishes it with the log's cursor in front (`#<cursor> <json>`), in one
 *   step: a Redis Stream and PUBLISH in one Lua script when Redis is configured (`s:<stream id>`,
 *   so every node sees one order), or process memory (`m:<process epoch>:<seq>`). `withChannelLog`
 *   wraps the bus so that every publisher of a relayed family does this without knowing of it.
 *
 * A since that the source cannot serve entirely (trimmed, expired, too far behind, another
 * process's memory cursor, malformed) is a gap: the caller answers RESUME_GAP.
 */
import { randomUUID } from 'node:crypto';
import { relays, wsLimits } from '../../generated/ws';
import type { Bus } from '../infra/bus';
import { createRedisLink, RedisUnavailableError, type RedisLink } from '../infra/cache';
import type { Logger } from '../infra/logger';

export interface LoggedFrame {
  cursor: string;
  /** The publisher's JSON text, as published on the bus. */
  message: string;
}

export type Replay = { frames: LoggedFrame[] } | { gap: true };

export interface ResumeLimits {
  bufferFrames: number;
  bufferTtlMs: number;
  eventsWindowMs: number;
  maxFrames: number;
}

export const defaultResumeLimits: ResumeLimits = {
  bufferFrames: wsLimits.resume_buffer_frames,
  bufferTtlMs: wsLimits.resume_buffer_ttl_ms,
  eventsWindowMs: wsLimits.resume_events_window_ms,
  maxFrames: wsLimits.resume_max_frames,
};

const CURSOR_MAX = 128;
const family = (busChannel: string) => busChannel.slice(0, busChannel.indexOf(':'));
/** Whether the bus channel belongs to a relayed family whose frames the publisher logs. */
export const isBuffered = (busChannel: string) => relays[family(busChannel)]?.resume === 'buffer';
export const isStored = (busChannel: string) => relays[family(busChannel)]?.resume === 'stored';

// ------------------------------------------------------------------ cursors

/**
 * The form of the messages on relayed bus channels (`events:{account_id}`, `chat:{account_id}`,
 * ...), format version RELAY_FORMAT: the publisher's JSON text, or `#<cursor> <json>` for a
 * logged one (`unframe` reads both; so does the previous release). Nodes of two releases share
 * these channels, so a new form comes in two releases (docs/guides/production.md, "Upgrades and
 * rollbacks"): the first reads it and still publishes this one; the next publishes it, on
 * `versionedKey(channel, RELAY_FORMAT)` (src/infra/cache.ts) when the two forms cannot be told apart.
 */
export const RELAY_FORMAT = 1;

/** Splits `#<cursor> <json>` (a logged message on the bus); a plain JSON message has no cursor. */
export function unframe(text: string): LoggedFrame | { cursor: null; message: string } {
  if (!text.startsWith('#')) return { cursor: null, message: text };
  const space = text.indexOf(' ');
  if (space < 0) return { cursor: null, message: text };
  return { cursor: text.slice(1, space), message: text.slice(space + 1) };
}

const frame = (cursor: string, message: string) => `#${cursor} ${message}`;

export const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const STREAM_RE = /^s:(\d{1,15})-(\d{1,15})$/;
const MEMORY_RE = /^m:([0-9a-f]{8,32}):(\d{1,15})$/;
const STORED_RE = /^e:(\d{1,15}):([0-9a-f-]{36})$/;

export interface StoredPosition {
  ms: number;
  id: string;
}

/** The cursor of an events-channel frame: the stored row's position, or now for a frame that is never stored. */
export function storedCursor(data: unknown): string {
  const row = (data ?? {}) as { id?: unknown; created_at?: unknown };
  const ms = typeof row.created_at === 'string' ? Date.parse(row.created_at) : NaN;
  if (typeof row.id === 'string' && UUID_RE.test(row.id.toLowerCase()) && Number.isFinite(ms)) return `e:${ms}:${row.id.toLowerCase()}`;
  return `e:${Date.now()}:${randomUUID()}`;
}

export function parseStored(cursor: string): StoredPosition | null {
  const m = STORED_RE.exec(cursor);
  return m && UUID_RE.test(m[2]!) ? { ms: Number(m[1]), id: m[2]! } : null;
}

function parseStream(cursor: string): [number, number] | null {
  const m = STREAM_RE.exec(cursor);
  return m ? [Number(m[1]), Number(m[2])] : null;
}

/**
 * Orders two cursors of one channel (negative: a before b). Cursors of different kinds or
 * malformed ones compare as unordered (null); the caller then keeps the frame.
 */
export function compareCursors(a: string, b: string): number | null {
  const sa = parseStored(a);
  const sb = parseStored(b);
  if (sa && sb) return sa.ms - sb.ms || (sa.id < sb.id ? -1 : sa.id > sb.id ? 1 : 0);
  const ra = parseStream(a);
  const rb = parseStream(b);
  if (ra && rb) return ra[0] - rb[0] || ra[1] - rb[1];
  const ma = MEMORY_RE.exec(a);
  const mb = MEMORY_RE.exec(b);
  if (ma && mb && ma[1] === mb[1]) return Number(ma[2]) - Number(mb[2]);
  return null;
}

// ------------------------------------------------------------------ the channel log (buffered families)

export interface ChannelLog {
  /** Appends and publishes in one step; answers false when it surely did not (the caller then publishes plainly). */
  publish(busChannel: string, message: string): Promise<boolean>;
  /** The logged frames after `since`, oldest first, or a gap. */
  after(busChannel: string, since: string): Promise<Replay>;
  close(): Promise<void>;
}

/** Process memory: one bounded array per bus channel, forgotten after the TTL without a frame. */
export function createMemoryChannelLog(bus: Bus, limits: ResumeLimits = defaultResumeLimits): ChannelLog {
  const epoch = randomUUID().replace(/-/g, '').slice(0, 16);
  interface Log {
    seq: number;
    /** The highest sequence number no longer kept (0: nothing dropped). */
    dropped: number;
    frames: { seq: number; message: string }[];
    lastAt: number;
  }
  const logs = new Map<string, Log>();
  let appends = 0;
  const expired = (log: Log, now: number) => now - log.lastAt > limits.bufferTtlMs;
  function sweep(now: number): void {
    for (const [channel, log] of logs) if (expired(log, now)) logs.delete(channel);
  }
  return {
    async publish(busChannel, message) {
      const now = Date.now();
      if ((appends += 1) % 1000 === 0) sweep(now);
      let log = logs.get(busChannel);
      if (!log || expired(log, now)) {
        // A channel forgotten by the TTL starts again past every cursor handed out for it.
        log = { seq: log?.seq ?? 0, dropped: log?.seq ?? 0, frames: [], lastAt: now };
        logs.set(busChannel, log);
      }
      log.seq += 1;
      log.lastAt = now;
      log.frames.push({ seq: log.seq, message });
      while (log.frames.length > limits.bufferFrames) log.dropped = log.frames.shift()!.seq;
      await bus.publish(busChannel, frame(`m:${epoch}:${log.seq}`, message));
      return true;
    },
    async after(busChannel, since) {
      const m = MEMORY_RE.exec(since);
      if (!m || m[1] !== epoch) return { gap: true };
      const seq = Number(m[2]);
      const log = logs.get(busChannel);
      if (!log || expired(log, Date.now())) return { gap: true };
      if (seq > log.seq || seq < log.dropped) return { gap: true };
      const frames = log.frames.filter((f) => f.seq > seq).map((f) => ({ cursor: `m:${epoch}:${f.seq}`, message: f.message }));
      return frames.length > limits.maxFrames ? { gap: true } : { frames };
    },
    async close() {
      logs.clear();
    },
  };
}

/**
 * XADD, trim one entry past the bound with XDEL (so `max-deleted-entry-id` names the newest entry
 * no longer kept), refresh the TTL and PUBLISH the framed message: one script, so the stream's
 * order is the order every node hears.
 */
const APPEND_SCRIPT = `
local id = redis.call('XADD', KEYS[1], '*', 'm', ARGV[1])
if redis.call('XLEN', KEYS[1]) > tonumber(ARGV[2]) then
  local first = redis.call('XRANGE', KEYS[1], '-', '+', 'COUNT', 1)
  redis.call('XDEL', KEYS[1], first[1][1])
end
redis.call('PEXPIRE', KEYS[1], ARGV[3])
redis.call('PUBLISH', KEYS[2], '#s:' .. id .. ' ' .. ARGV[1])
return id
`;

/** Redis Streams, shared by every node; `prefix` is the bus's (the script publishes where the bus listens). */
export function createRedisChannelLog(url: string, prefix: string, log: Logger, limits: ResumeLimits = defaultResumeLimits): ChannelLog {
  const link: RedisLink = createRedisLink(url, { name: 'channel log', log });
  const key = (busChannel: string) => `${prefix}ws:log:${busChannel}`;
  return {
    async publish(busChannel, message) {
      try {
        await link.run((redis) => redis.eval(APPEND_SCRIPT, 2, key(busChannel), prefix + busChannel, message, limits.bufferFrames, limits.bufferTtlMs));
        return true;
      } catch (error) {
        // Never sent: the caller publishes plainly (delivered on this node without a cursor).
        if (error instanceof RedisUnavailableError) return false;
        // Sent or not, we cannot know (a timeout): publishing again could deliver it twice.
        log.warn({ err: error, channel: busChannel }, 'channel log append failed');
        return true;
      }
    },
    async after(busChannel, since) {
      const position = parseStream(since);
      if (!position) return { gap: true };
      const id = `${position[0]}-${position[1]}`;
      const info = await link
        .run((redis) => redis.call('XINFO', 'STREAM', key(busChannel)) as Promise<unknown[]>)
        .catch((error: unknown) => {
          if (error instanceof Error && /no such key/i.test(error.message)) return null;
          throw error;
        });
      if (!info) return { gap: true };
      const field = (name: string) => info[info.indexOf(name) + 1];
      const last = parseStream(`s:${String(field('last-generated-id'))}`);
      const deleted = parseStream(`s:${String(field('max-deleted-entry-id'))}`);
      const cmp = (a: [number, number], b: [number, number]) => a[0] - b[0] || a[1] - b[1];
      if (!last || cmp(position, last) > 0 || (deleted && cmp(position, deleted) < 0)) return { gap: true };
      const entries = (await link.run((redis) => redis.xrange(key(busChannel), `(${id}`, '+', 'COUNT', limits.maxFrames + 1))) as [string, string[]][];
      if (entries.length > limits.maxFrames) return { gap: true };
      return { frames: entries.map(([entryId, fields]) => ({ cursor: `s:${entryId}`, message: fields[fields.indexOf('m') + 1] ?? 'null' })) };
    },
    close: () => link.close(),
  };
}

/**
 * The bus every module publishes on: messages of buffered relayed families go through the
 * channel log (logged, then published with their cursor); everything else passes through. While
 * the log cannot be written (Redis unreachable) the message is published plainly: delivered
 * without a cursor, never lost for the live sockets.
 */
export interface LoggedBus extends Bus {
  readonly channelLog: ChannelLog;
}

export function withChannelLog(bus: Bus, channelLog: ChannelLog): LoggedBus {
  return {
    channelLog,
    get kind() {
      return bus.kind;
    },
    get live() {
      return bus.live;
    },
    onLiveChange: (listener) => bus.onLiveChange(listener),
    onLocalOnly: (listener) => bus.onLocalOnly?.(listener) ?? (() => undefined),
    confirm: () => bus.confirm(),
    async publish(channel, message) {
      if (isBuffered(channel) && (await channelLog.publish(channel, message))) return;
      await bus.publish(channel, message);
    },
    subscribe: (channel, handler) => bus.subscribe(channel, handler),
    subscribePattern: (pattern, handler) => bus.subscribePattern(pattern, handler),
    async close() {
      await channelLog.close().catch(() => undefined);
      await bus.close();
    },
  };
}

/** The bus of a node: Redis's channel log when Redis is configured (shared by the nodes), else process memory. */
export function loggedBus(bus: Bus, redis: { url: string | null; prefix: string }, log: Logger): LoggedBus {
  return withChannelLog(bus, redis.url ? createRedisChannelLog(redis.url, redis.prefix, log) : createMemoryChannelLog(bus));
}

/** The channel log behind a bus, when it is a logged bus (tests may build apps on a plain one). */
export const channelLogOf = (bus: Bus): ChannelLog | undefined => (bus as Partial<LoggedBus>).channelLog;

// ------------------------------------------------------------------ the stored source (events)

/**
 * The stored frames of an events channel after `since`, or a gap: the events module, which owns
 * the events table, supplies it (its API's `storedReplay`); the hub calls it for `stored` families.
 */
export type StoredReplay = (busChannel: string, since: string) => Promise<Replay>;

export const validCursor = (since: string) => since.length <= CURSOR_MAX;
