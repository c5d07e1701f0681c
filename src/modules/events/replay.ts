/**
 * The `stored` resume source of events:{account_id} (spec/ws-protocol/, "Resume"): the
 * account's stored events after a cursor, as the bus messages this module publishes. It reads the
 * events table, which this module owns; the realtime hub receives it through `use('events')`.
 */
import type { Knex } from 'knex';
import { defaultResumeLimits, parseStored, storedCursor, UUID_RE, type Replay, type ResumeLimits, type StoredReplay } from '../../realtime/resume';
import { itemOfRow, type EventRow } from './repo';
import { eventWire } from './service';

/** The stored events of the account after `since`, as their bus messages (what the events module publishes). */
export function createStoredReplay(knex: Knex, limits: ResumeLimits = defaultResumeLimits): StoredReplay {
  return async (busChannel: string, since: string): Promise<Replay> => {
    const position = parseStored(since);
    const accountId = busChannel.slice(busChannel.indexOf(':') + 1).toLowerCase();
    if (!position || !UUID_RE.test(accountId) || position.ms > Date.now() + 60_000 || position.ms < Date.now() - limits.eventsWindowMs) return { gap: true };
    // Positions are milliseconds (the wire's created_at), ties broken by id: the frames' own order.
    const rows = (await knex('events')
      .select('id', 'account_id', 'type', 'platform', 'external_id', 'raw', 'hidden', 'created_at')
      .where({ account_id: accountId, hidden: false })
      .andWhere(knex.raw("(date_trunc('milliseconds', created_at), id) > (?::timestamptz, ?::uuid)", [new Date(position.ms).toISOString(), position.id]))
      .orderByRaw("date_trunc('milliseconds', created_at), id")
      .limit(limits.maxFrames + 1)) as EventRow[];
    if (rows.length > limits.maxFrames) return { gap: true };
    return {
      frames: rows.map((row) => {
        const wire = eventWire(itemOfRow(row));
        return { cursor: storedCursor(wire), message: JSON.stringify(wire) };
      }),
    };
  };
}
