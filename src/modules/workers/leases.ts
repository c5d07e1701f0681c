/**
 * Owned work (docs/adr/005-background-jobs.md): each unit (a platform channel's ingest) is held by
 * one node at a time through a row lease in `worker_leases` with an expiry and a fence that rises
 * with every change of holder. Every `renew` period a node
 * - marks itself alive in `worker_nodes` and counts the live nodes (seen within the lease lifetime);
 * - renews its leases; a lease it could not renew is lost: its unit stops;
 * - releases units nobody wants any more, and units beyond its share (ceil(units / live nodes)),
 *   stopping each before its row goes;
 * - takes free or expired leases up to its share and starts their units.
 * A node that cannot renew stops every unit by its own clock at (start of its last successful
 * renewal + lifetime − margin), which is before the database lets another node take the lease
 * (expiry counted from the renewal's commit), so two nodes never ingest one unit in steady state.
 * A dead node's units are taken over once its leases expire and its heartbeat is stale: within
 * lease lifetime + one renew period.
 */
import os from 'node:os';
import { randomBytes } from 'node:crypto';
import type { Knex } from 'knex';
import type { operations } from '../../../generated/openapi';
import type { Camelize } from '../../http/mapping';
import { schemaRows, tableColumns, type RowValue } from '../../infra/db/rows';
import type { Logger } from '../../infra/logger';

export interface OwnedWork {
  /** `platform_a`, `platform_b`: the lease's kind, and the prefix of its key. */
  readonly kind: string;
  /** Every unit that should run somewhere in the cluster. */
  list(): Promise<string[]>;
  /** This node holds the unit's lease now: begin. */
  start(unit: string): void;
  /** This node is about to lose or give up the lease: end (resolves once nothing more is ingested). */
  stop(unit: string): Promise<void>;
  /** How often to look for new units (the lease loop runs at the shorter of this and the renew period). */
  readonly periodMs?: number;
}

/** GET /v1/admin/workers, in domain form. */
export type WorkersView = Camelize<operations['adminWorkers']['responses'][200]['content']['application/json']['data']>;

/** A live node (spec `WorkerNode`; the route adds how many channels it holds). */
const nodeOf = schemaRows('WorkerNode', { omit: ['channels'], from: { last_seen_at: 'seen_at' } });
export type WorkerNode = RowValue<typeof nodeOf>;
/**
 * A lease: its holder, fence and times as the route shows a channel's (spec `WorkerChannelLease`),
 * with its kind and key in place of the platform and channel, which the route splits out of the key.
 */
const leaseOf = schemaRows('WorkerChannelLease', { omit: ['platform', 'account_id', 'platform_channel_id'], extra: tableColumns('worker_leases', ['key', 'kind']) });
export type Lease = Omit<RowValue<typeof leaseOf>, 'key'> & { unit: string };

export interface Leases {
  readonly nodeId: string;
  own(work: OwnedWork): void;
  start(): Promise<void>;
  /** Stops every unit, then gives up the leases (others take them over at their next renewal). */
  stop(): Promise<void>;
  /** One lease round now (tests). */
  tick(): Promise<void>;
  held(kind: string): string[];
  /** Every live node and every lease, for GET /v1/admin/workers. */
  snapshot(): Promise<{ nodes: WorkerNode[]; leases: Lease[] }>;
}

interface KindState {
  work: OwnedWork;
  held: Map<string, number>;
  watchdog?: NodeJS.Timeout;
}

const leaseKey = (kind: string, unit: string) => `${kind}:${unit}`;

export function defaultNodeId(): string {
  return `${os.hostname()}:${process.pid}:${randomBytes(3).toString('hex')}`;
}

export function createLeases(deps: { knex: Knex; log: Logger; nodeId: string; ttlMs: number; renewMs: number; version?: string }): Leases {
  const { knex, log, nodeId, ttlMs } = deps;
  const kinds = new Map<string, KindState>();
  const margin = Math.min(1000, Math.floor(ttlMs / 10));
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | null = null;
  let stopped = false;

  async function stopUnit(state: KindState, unit: string, why: string): Promise<void> {
    state.held.delete(unit);
    await state.work.stop(unit).catch((error: unknown) => log.warn({ err: error, kind: state.work.kind, unit, why }, 'owned work failed to stop'));
  }

  async function release(state: KindState, units: string[], why: string): Promise<void> {
    if (units.length === 0) return;
    for (const unit of units) await stopUnit(state, unit, why);
    // Expired, not deleted: the row keeps its fence, so the next holder's is higher (a deleted row
    // started again at 1, and a late write of this holder could not be told from the next one's).
    await knex.raw(`update worker_leases set expires_at = now() - interval '1 millisecond' where node_id = ? and key = any(?::text[])`, [nodeId, units.map((u) => leaseKey(state.work.kind, u))]);
  }

  /** Stops every unit of the kind when its last renewal runs out by this node's clock. */
  function arm(state: KindState, validUntil: number): void {
    clearTimeout(state.watchdog);
    state.watchdog = setTimeout(
      () => {
        if (state.held.size === 0) return;
        log.warn({ kind: state.work.kind, units: state.held.size }, 'ingest leases not renewed in time: stopping their units');
        for (const unit of [...state.held.keys()]) void stopUnit(state, unit, 'expired');
      },
      Math.max(0, validUntil - Date.now()),
    );
    state.watchdog.unref();
  }

  async function roundFor(state: KindState, live: number): Promise<void> {
    const { kind } = state.work;
    const wanted = new Set(await state.work.list());
    const renewedAt = Date.now();
    const mine = [...state.held.keys()];
    if (mine.length > 0) {
      const { rows } = (await knex.raw(
        `update worker_leases set expires_at = now() + (? * interval '1 millisecond')
          where node_id = ? and key = any(?::text[]) returning key, fence`,
        [ttlMs, nodeId, mine.map((u) => leaseKey(kind, u))],
      )) as { rows: { key: string }[] };
      const renewed = new Set(rows.map((r) => r.key));
      for (const unit of mine) if (!renewed.has(leaseKey(kind, unit))) await stopUnit(state, unit, 'lost');
    }
    arm(state, renewedAt + ttlMs - margin);
    await release(
      state,
      [...state.held.keys()].filter((u) => !wanted.has(u)),
      'unwanted',
    );
    const share = Math.ceil(wanted.size / Math.max(1, live));
    const held = [...state.held.keys()];
    if (held.length > share) {
      await release(state, held.slice(share), 'rebalance');
      return;
    }
    const free = [...wanted].filter((u) => !state.held.has(u));
    if (held.length === share || free.length === 0) return;
    const { rows } = (await knex.raw(
      `with candidates as (
         select k.key from unnest(?::text[]) as k(key) left join worker_leases l on l.key = k.key
          where l.key is null or l.expires_at < now()
          order by random() limit ?
       )
       insert into worker_leases (key, kind, node_id, fence, acquired_at, expires_at)
       select key, ?, ?, 1, now(), now() + (? * interval '1 millisecond') from candidates
       on conflict (key) do update set node_id = excluded.node_id, fence = worker_leases.fence + 1, acquired_at = excluded.acquired_at, expires_at = excluded.expires_at
        where worker_leases.expires_at < now()
       returning key, fence`,
      [free.map((u) => leaseKey(kind, u)), share - held.length, kind, nodeId, ttlMs],
    )) as { rows: { key: string; fence: string | number }[] };
    for (const row of rows) {
      const unit = row.key.slice(kind.length + 1);
      if (stopped) break;
      state.held.set(unit, Number(row.fence));
      state.work.start(unit);
    }
  }

  /** The heartbeat: every node, so GET /v1/admin/workers lists it; one without owned work is `passive`. */
  async function heartbeat(): Promise<void> {
    await knex.raw(`insert into worker_nodes (node_id, started_at, seen_at, version, passive) values (?, now(), now(), ?, ?) on conflict (node_id) do update set seen_at = now(), version = excluded.version, passive = excluded.passive`, [
      nodeId,
      deps.version ?? null,
      kinds.size === 0,
    ]);
  }

  async function round(): Promise<void> {
    if (stopped) return;
    await heartbeat();
    if (kinds.size === 0) return;
    // Passive nodes run no ingest: the units are shared among the others.
    const { rows } = (await knex.raw(`select count(*)::int as live from worker_nodes where seen_at > now() - (? * interval '1 millisecond') and not passive`, [ttlMs])) as { rows: { live: number }[] };
    const live = Number(rows[0]?.live ?? 1);
    for (const state of kinds.values()) {
      if (stopped) return;
      await roundFor(state, live).catch((error: unknown) => log.warn({ err: error, kind: state.work.kind }, 'ingest lease round failed'));
    }
  }

  const tick = (): Promise<void> => {
    running ??= round()
      .catch((error: unknown) => log.warn({ err: error }, 'ingest lease round failed'))
      .finally(() => {
        running = null;
      });
    return running;
  };

  return {
    nodeId,
    own(work) {
      if (kinds.has(work.kind)) throw new Error(`owned work ${work.kind} is registered twice`);
      kinds.set(work.kind, { work, held: new Map() });
    },
    async start() {
      const periodMs = Math.min(deps.renewMs, ...[...kinds.values()].map((s) => s.work.periodMs ?? deps.renewMs));
      await tick();
      timer = setInterval(() => void tick(), periodMs);
      timer.unref();
    },
    async stop() {
      stopped = true;
      clearInterval(timer);
      await running;
      for (const state of kinds.values()) {
        clearTimeout(state.watchdog);
        await release(state, [...state.held.keys()], 'shutdown').catch((error: unknown) => log.warn({ err: error }, 'releasing ingest leases failed'));
      }
      await knex.raw('delete from worker_nodes where node_id = ?', [nodeId]).catch(() => undefined);
    },
    tick,
    held: (kind) => [...(kinds.get(kind)?.held.keys() ?? [])],
    async snapshot() {
      type Rows = { rows: Record<string, unknown>[] };
      const nodes = (await knex.raw(`select ${nodeOf.select} from worker_nodes where seen_at > now() - (? * interval '1 millisecond') order by node_id`, [ttlMs])) as Rows;
      const leases = (await knex.raw(`select ${leaseOf.select} from worker_leases where expires_at > now() order by kind, key`)) as Rows;
      return {
        nodes: nodes.rows.map((r) => nodeOf.map(r)),
        leases: leases.rows.map((r) => {
          const { key, ...lease } = leaseOf.map(r);
          return { ...lease, unit: key.slice(lease.kind.length + 1) };
        }),
      };
    },
  };
}
