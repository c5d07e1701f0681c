/**
 * Stream events (Part 2, "Events"): the stored history per account with its filters, emitting
 * (idempotent per account and external id), test and bot events that are only broadcast, and the
 * broadcast on the internal bus channel `events:{account_id}` that the realtime relay delivers to
 * subscribed sockets. A stored event is published only after its transaction committed, so a
 * socket never sees an event the API cannot read yet. Community gift bundling lives in gifts.ts.
 * Gates (events:read, events:create, feature:events, system key) are enforced by the bindings'
 * shared code; this service checks only data (the active account, input shapes).
 */
import { randomUUID } from 'node:crypto';
import type { AuthContext } from '../../auth/context';
import { AppError } from '../../errors';
import type { Bus } from '../../infra/bus';
import type { HotRead } from '../../infra/db/hot-read';
import { jsonTextWithin, type JsonText } from '../../infra/json-bytes';
import type { Logger } from '../../infra/logger';
import type { ReadBudget, ReadHold } from '../../infra/read-budget';
import { pageOf, type Page, type PageRequest } from '../../paging';
import { eventMessages } from './errors';
import { itemOfRow, RETENTION_WINDOWS_SQL, type EventItem, type EventQuery, type EventRow, type EventsRepo } from './repo';
import { UUID_RE } from '../../infra/ids';

/** The domain shape: REST names `type`, GraphQL `eventType`; each transport keeps its own. */
export type StreamEvent = EventItem;

export interface EventFilter {
  /** Position (0-based) of the first event, instead of the request's page. */
  offset?: number | string | null;
  /** Exact types: a list (GraphQL) or a comma-separated string (REST). */
  types?: readonly string[] | string | null;
  platform?: string | null;
  userId?: string | null;
  search?: string | null;
  from?: string | null;
  to?: string | null;
}

export interface EmitInput {
  type: string;
  platform: string;
  raw: unknown;
  externalId?: string | null;
}

export interface EmitResult {
  id: string;
  duplicate: boolean;
  event: StreamEvent;
}

/** Hooks around a stored event (community gift bundling); run inside the emit's transaction or after the commit. */
export interface EmitHooks {
  /** Whether the new row is hidden from the history (individual community gift notices). */
  hidden?(input: { type: string; platform: string; raw: Record<string, unknown> }): boolean;
  /** After the commit and the broadcast of a new row (bundles complete here). */
  settle?(row: EventRow): Promise<void>;
}

const TYPE_RE = /^[A-Za-z0-9_.-]+:[A-Za-z0-9_.:-]+$/;
/** Strict RFC 3339 (date, time, optional fraction, zone). */
const RFC3339_RE = /^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/;

/** The wire form published on `events:{account_id}` (Part 2: the relay forwards it as `data`). */
export function eventWire(e: StreamEvent): Record<string, unknown> {
  return { id: e.id, account_id: e.accountId, type: e.type, platform: e.platform, external_id: e.externalId, raw: e.raw, created_at: e.createdAt };
}

export const eventsBusChannel = (accountId: string) => `events:${accountId}`;

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function checkType(type: unknown): string {
  if (typeof type !== 'string' || type.length < 3 || type.length > 100 || !TYPE_RE.test(type)) throw AppError.validation(eventMessages.invalidType, { fields: [{ field: 'type', message: eventMessages.invalidType }] });
  return type;
}

function checkPlatform(platform: unknown): string {
  if (typeof platform !== 'string' || platform.length < 1 || platform.length > 50) throw AppError.validation(eventMessages.invalidPlatform, { fields: [{ field: 'platform', message: eventMessages.invalidPlatform }] });
  return platform;
}

function checkRaw(raw: unknown): Record<string, unknown> {
  if (!isObject(raw)) throw AppError.validation(eventMessages.invalidRaw, { fields: [{ field: 'raw', message: eventMessages.invalidRaw }] });
  return raw;
}

/** `raw` as the JSON text that is stored, refused past `max` bytes. */
function rawText(raw: Record<string, unknown>, max: number): string {
  const text = jsonTextWithin(raw, max);
  if (text === null) throw AppError.validation(eventMessages.rawTooLarge(max), { fields: [{ field: 'raw', message: eventMessages.rawTooLarge(max) }] });
  return text;
}

/** The largest `offset` of a page (spec/openapi/modules/events.yaml). */
const MAX_OFFSET = 10_000_000;

function offsetOf(value: number | string | null | undefined): number | undefined {
  if (value === undefined || value === null || value === '') return undefined;
  const n = typeof value === 'number' ? value : Number(value);
  if (!Number.isInteger(n) || n < 0 || n > MAX_OFFSET) throw AppError.validation(eventMessages.invalidOffset, { fields: [{ field: 'offset', message: eventMessages.invalidOffset }] });
  return n;
}

/** A page of events: the byte budget may cut it short (`truncated`), and then names where the next starts. */
export type EventsPage = Page<StreamEvent> & { truncated: boolean; nextOffset: number | null };
/** An events page whose events are the API's JSON text (`listText`): the page's numbers as `EventsPage`'s. */
export type EventsTextPage = Omit<EventsPage, 'items'> & { items: JsonText };

/** The byte budgets of the events surface (config `events`; src/config/config.ts). */
export interface EventBudgets {
  maxRawBytes: number;
  pageMaxBytes: number;
  /** The node's budget of page bytes in flight; absent: unbounded (unit tests of the service alone). */
  reads?: ReadBudget;
}

export const DEFAULT_EVENT_BUDGETS: EventBudgets = { maxRawBytes: 64 * 1024, pageMaxBytes: 1024 * 1024 };

function time(field: 'from' | 'to', value: string | null | undefined): Date | undefined {
  if (value === undefined || value === null || value === '') return undefined;
  const parsed = RFC3339_RE.test(value) ? new Date(value) : new Date(NaN);
  if (Number.isNaN(parsed.getTime())) throw AppError.validation(eventMessages.invalidTime(field), { fields: [{ field, message: eventMessages.invalidTime(field) }] });
  return parsed;
}

const list = (value: readonly string[] | string | null | undefined): string[] | undefined => {
  if (value === undefined || value === null) return undefined;
  const items = (typeof value === 'string' ? value.split(',') : value).map((s) => s.trim()).filter(Boolean);
  return items.length ? items : undefined;
};

export function createEventsService(deps: { repo: EventsRepo; bus: Bus; log: Logger; budgets?: EventBudgets }) {
  const { repo, bus, log } = deps;
  const budgets = deps.budgets ?? DEFAULT_EVENT_BUDGETS;
  const retentionSweeps: (() => Promise<number>)[] = [];

  /** The gate guarantees an account-scope permission, hence an active account; a system key has none. */
  function accountOf(auth: AuthContext): string {
    if (!auth.accountId) throw AppError.unauthorized('No active account');
    return auth.accountId;
  }

  async function publish(event: StreamEvent): Promise<void> {
    await bus.publish(eventsBusChannel(event.accountId), JSON.stringify(eventWire(event)));
  }

  /**
   * A page by `read` (`repo.page` or `repo.textPage`): the filter checked and read, the page asked
   * by `page` or `offset`, and the node's read budget held for it (see `list`). `count` tells how
   * many events the page holds (where the next page starts).
   */
  async function readPage<P extends { total: number; truncated: boolean; bytes: number }>(
    read: HotRead<[string, EventQuery, number, number], P>,
    count: (page: P) => number,
    auth: AuthContext,
    filter: EventFilter,
    asked: PageRequest,
    untilAnswered?: (release: () => void) => void,
  ): Promise<{ found: P; request: PageRequest; nextOffset: number | null }> {
    const offset = offsetOf(filter.offset);
    const request: PageRequest = offset === undefined ? asked : { page: Math.floor(offset / asked.limit) + 1, limit: asked.limit, offset };
    const types = list(filter.types);
    if (types && types.length > 50) throw AppError.validation(eventMessages.tooManyTypes);
    const query: EventQuery = {
      types,
      platforms: list(filter.platform),
      userId: filter.userId ?? undefined,
      search: filter.search ? filter.search : undefined,
      from: time('from', filter.from),
      to: time('to', filter.to),
    };
    const accountId = accountOf(auth);
    // A page to load holds what a page may cost before the read, and what it did cost after; a
    // kept page (current for this call) holds only its own bytes, and reads nothing. Either
    // holds until its answer is written. (Holding the most a page may cost for every read, a
    // page read by many requests at once, as a dashboard's during a stream, let only a few of
    // them in at a time: a quarter of the node's budget per account.)
    const reads = budgets.reads;
    let found: P;
    let hold: ReadHold | null = null;
    if (reads) {
      const held: { hold: ReadHold | null } = { hold: null };
      try {
        found = await read.beforeLoad(async () => (held.hold = await reads.acquire(accountId, budgets.pageMaxBytes)), accountId, query, request.limit, request.offset);
      } catch (error) {
        held.hold?.release();
        throw error;
      }
      hold = held.hold;
      if (hold) hold.resize(found.bytes);
      else hold = await reads.acquire(accountId, found.bytes);
    } else found = await read(accountId, query, request.limit, request.offset);
    if (hold) {
      const release = hold.release;
      if (untilAnswered) untilAnswered(release);
      else release();
    }
    const end = request.offset + count(found);
    const nextOffset = (found.truncated || offset !== undefined) && end < found.total ? end : null;
    return { found, request, nextOffset };
  }

  const service = {
    /** Set once by the module (community gift bundling). */
    hooks: {} as EmitHooks,
    /**
     * The retention windows shared with other modules' rows (chat): `windowsSql` selects
     * `(account_id, days)` per account; `register` adds a sweep the retention run calls after
     * deleting events.
     */
    retention: {
      windowsSql: RETENTION_WINDOWS_SQL,
      register(sweep: () => Promise<number>): void {
        retentionSweeps.push(sweep);
      },
    },
    /** The retention sweep (Part 2, "Retention"): events, then every registered sweep; answers the rows deleted. */
    async sweepRetention(): Promise<number> {
      let deleted = await repo.deleteExpired();
      for (const sweep of retentionSweeps) {
        try {
          deleted += await sweep();
        } catch (error) {
          log.warn({ err: error }, 'retention sweep failed');
        }
      }
      return deleted;
    },
    /** Closes aged-out community gift bundles now (the module's timer calls it; set by the module). */
    sweepGifts: (): Promise<number> => Promise.resolve(0),
    /**
     * A page of the history, newest first; its events are kept values (frozen, repo.ts) shared with
     * other requests. The page holds part of the node's read budget until `untilAnswered` releases
     * it (the answer written out); without it, on return.
     */
    async list(auth: AuthContext, filter: EventFilter, asked: PageRequest, untilAnswered?: (release: () => void) => void): Promise<EventsPage> {
      const { found, request, nextOffset } = await readPage(repo.page, (page) => page.items.length, auth, filter, asked, untilAnswered);
      return { ...pageOf(found.items, found.total, request), truncated: found.truncated, nextOffset };
    },
    /**
     * `list` with the page's events as the API's JSON text (repo.ts `textPage`), for the REST
     * answer to splice as it is (rest.ts): the same filters, checks, paging, byte budget and read
     * budget; a kept page is the text itself.
     */
    async listText(auth: AuthContext, filter: EventFilter, asked: PageRequest, untilAnswered?: (release: () => void) => void): Promise<EventsTextPage> {
      const { found, request, nextOffset } = await readPage(repo.textPage, (page) => page.count, auth, filter, asked, untilAnswered);
      return { ...pageOf([], found.total, request), items: found.items, truncated: found.truncated, nextOffset };
    },
    async get(auth: AuthContext, id: string): Promise<StreamEvent> {
      const row = UUID_RE.test(id) ? await repo.byId(accountOf(auth), id) : undefined;
      if (!row) throw AppError.notFound(eventMessages.eventNotFound);
      return row;
    },
    /**
     * Stores and broadcasts. With an external id, a redelivery (also one racing the first
     * delivery) answers the stored row with `duplicate: true` and is not broadcast again: the
     * unique (account, external id) key decides, not a read before the write.
     */
    async emit(auth: AuthContext, input: EmitInput): Promise<EmitResult> {
      const accountId = accountOf(auth);
      return service.emitFor(accountId, input);
    },
    /** emit for an account the caller already proved access to (webhooks and workers use it too). */
    async emitFor(accountId: string, input: EmitInput): Promise<EmitResult> {
      const type = checkType(input.type);
      const platform = checkPlatform(input.platform);
      const raw = checkRaw(input.raw);
      const text = rawText(raw, budgets.maxRawBytes);
      const externalId = input.externalId ?? null;
      if (externalId !== null && (typeof externalId !== 'string' || externalId.length < 1 || externalId.length > 255)) {
        throw AppError.validation(eventMessages.invalidExternalId, { fields: [{ field: 'external_id', message: eventMessages.invalidExternalId }] });
      }
      const hidden = service.hooks.hidden?.({ type, platform, raw }) ?? false;
      // One statement, committed on its own together with the version bump its trigger makes: an
      // explicit transaction around it would only add two round trips before the broadcast.
      const inserted = await repo.insert({ id: randomUUID(), account_id: accountId, type, platform, external_id: externalId, raw, hidden }, undefined, text);
      if (!inserted) {
        const stored = await repo.byExternalId(accountId, externalId!);
        if (!stored) throw new Error('event insert conflicted but no stored row was found');
        return { id: stored.id, duplicate: true, event: stored };
      }
      // Committed: only now may a socket see it.
      const event = itemOfRow(inserted);
      if (!hidden) await publish(event);
      await service.hooks.settle?.(inserted);
      return { id: event.id, duplicate: false, event };
    },
    /** A test event: broadcast on the account's events channel, never stored. */
    async test(auth: AuthContext, input: { type?: string; platform?: string; raw?: unknown }): Promise<StreamEvent> {
      const event: StreamEvent = {
        id: randomUUID(),
        accountId: accountOf(auth),
        type: checkType(input.type ?? 'test:event'),
        eventType: input.type ?? 'test:event',
        platform: checkPlatform(input.platform ?? 'test'),
        externalId: null,
        raw: checkRaw(input.raw ?? {}),
        createdAt: new Date().toISOString(),
      };
      rawText(event.raw, budgets.maxRawBytes);
      await publish(event);
      return event;
    },
    /** A bot's event (system keys only, by gate): broadcast on `events:{accountId}`, never stored. */
    async emitBot(input: { accountId: string; eventType: string; platform: string; username: string; raw: unknown }): Promise<StreamEvent> {
      if (!UUID_RE.test(input.accountId)) throw AppError.validation(eventMessages.invalidAccountId, { fields: [{ field: 'accountId', message: eventMessages.invalidAccountId }] });
      const type = checkType(input.eventType);
      const platform = checkPlatform(input.platform);
      const raw = checkRaw(input.raw);
      if (typeof input.username !== 'string' || input.username.length < 1 || input.username.length > 100) throw AppError.validation(eventMessages.invalidUsername);
      if (!(await repo.accountExists(input.accountId))) throw AppError.notFound(eventMessages.accountNotFound);
      const event: StreamEvent = {
        id: randomUUID(),
        accountId: input.accountId.toLowerCase(),
        type,
        eventType: type,
        platform,
        externalId: null,
        raw: { username: input.username, ...raw },
        createdAt: new Date().toISOString(),
      };
      rawText(event.raw, budgets.maxRawBytes);
      await publish(event);
      return event;
    },
    /** Re-broadcasts a stored row as it is now (the patched community gift header keeps its id and created_at). */
    async rebroadcast(row: EventRow): Promise<void> {
      await publish(itemOfRow(row)).catch((error: unknown) => log.warn({ err: error }, 'event re-broadcast failed'));
    },
  };
  return service;
}

export type EventsService = ReturnType<typeof createEventsService>;
