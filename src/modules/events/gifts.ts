/**
 * Community gift bundling (Part 2, "Community gift bundling", platform_a). A community gift of N
 * subs arrives as one header (`raw.community_gift_id` with a positive integer `raw.total`) and N
 * individual gift notices (the same `raw.community_gift_id`, no `total`). The header is stored
 * and broadcast at once; individual rows are stored hidden from the history and not broadcast.
 * When the stored individual rows reach the header's total, or a periodic sweep finds the bundle
 * older than `bundleTimeoutMs`, the header is patched with `giftRecipients` read back from the
 * stored rows and re-broadcast with the same id and `created_at`. The count lives in the
 * database, so notices arriving on different nodes complete one bundle; the header row is locked
 * while it is patched, so it is patched once.
 *
 * A standalone gift record (a platform_a `gift`/`gift_sub` row with a gifter and an integer
 * `raw.total` but no `community_gift_id` and no recipient: the summary some workers send beside,
 * or instead of, the canonical header) is held: stored hidden, keyed on gifter and total. A
 * canonical header of the same gifter and total arriving within `holdMs` (before or after it)
 * supersedes it (`raw.superseded_by` names the header; it stays hidden). Once the hold has passed
 * with no such header, the sweep releases it: unhidden and broadcast with its own id and
 * `created_at`. Both sides look for the other after their own commit, so the race between nodes
 * has one outcome.
 */
import type { Knex } from 'knex';
import type { Logger } from '../../infra/logger';
import type { EventRow } from './repo';
import type { EmitHooks } from './service';

export interface GiftBundlerOptions {
  knex: Knex;
  log: Logger;
  rebroadcast(row: EventRow): Promise<void>;
  /** How old an incomplete bundle may get before the sweep closes it (default 30 s). */
  bundleTimeoutMs?: number;
  /** How long a standalone gift record waits for its canonical header (default 10 s). */
  holdMs?: number;
}

const giftId = (raw: Record<string, unknown>) => (typeof raw.community_gift_id === 'string' && raw.community_gift_id.length > 0 ? raw.community_gift_id : null);
const isHeader = (platform: string, raw: Record<string, unknown>) => platform === 'platform_a' && giftId(raw) !== null && Number.isInteger(raw.total) && (raw.total as number) > 0;
const isNotice = (platform: string, raw: Record<string, unknown>) => platform === 'platform_a' && giftId(raw) !== null && raw.total === undefined;
const STANDALONE_TYPES = new Set(['platform_a:gift', 'platform_a:gift_sub']);
/** The gifter of a header or standalone record: its user id, else its user name. */
const gifterOf = (raw: Record<string, unknown>): string | null => {
  const value = raw.user_id ?? raw.gifter_user_id ?? raw.user_name ?? raw.gifter_user_name;
  return typeof value === 'string' && value.length > 0 ? value : null;
};
const isStandalone = (type: string, platform: string, raw: Record<string, unknown>) =>
  platform === 'platform_a' &&
  STANDALONE_TYPES.has(type) &&
  giftId(raw) === null &&
  Number.isInteger(raw.total) &&
  (raw.total as number) > 0 &&
  gifterOf(raw) !== null &&
  raw.recipient_user_id === undefined &&
  raw.recipient_user_name === undefined;
const parseRaw = (raw: unknown): Record<string, unknown> => (typeof raw === 'string' ? (JSON.parse(raw) as Record<string, unknown>) : (raw as Record<string, unknown>));

/** One recipient as read back from an individual notice row. */
function recipient(row: EventRow): Record<string, unknown> {
  const raw = row.raw;
  return {
    user_id: raw.recipient_user_id ?? raw.user_id ?? null,
    user_name: raw.recipient_user_name ?? raw.user_name ?? null,
    display_name: raw.recipient_display_name ?? raw.display_name ?? null,
  };
}

export function createGiftBundler(options: GiftBundlerOptions) {
  const { knex, log } = options;
  const bundleTimeoutMs = options.bundleTimeoutMs ?? 30_000;
  const holdMs = options.holdMs ?? 10_000;

  /** Held standalone records of this gifter and total (hidden, not superseded, not released). */
  const heldQuery = (db: Knex, accountId: string, gifter: string, total: number) =>
    db('events')
      .where({ account_id: accountId, platform: 'platform_a', hidden: true })
      .whereIn('type', [...STANDALONE_TYPES])
      .whereRaw("(raw ->> 'community_gift_id') is null")
      .whereRaw("(raw ->> 'superseded_by') is null")
      .whereRaw("(raw ->> 'total') = ?", [String(total)])
      .whereRaw("coalesce(raw ->> 'user_id', raw ->> 'gifter_user_id', raw ->> 'user_name', raw ->> 'gifter_user_name') = ?", [gifter]);

  /** Marks held records superseded by `headerId`; answers how many. */
  async function supersede(db: Knex, rows: EventRow[], headerId: string): Promise<number> {
    for (const row of rows) {
      await db('events').where({ id: row.id }).update({ raw: JSON.stringify({ ...parseRaw(row.raw), superseded_by: headerId }) });
    }
    return rows.length;
  }

  /** A header arrived: supersedes the held records of its gifter and total within the hold window. */
  async function headerArrived(header: EventRow): Promise<void> {
    const gifter = gifterOf(header.raw);
    if (gifter === null) return;
    const since = new Date(new Date(header.created_at).getTime() - holdMs);
    const held: EventRow[] = await heldQuery(knex, header.account_id, gifter, header.raw.total as number).where('created_at', '>=', since);
    await supersede(knex, held, header.id);
  }

  /** A standalone record was stored (hidden): superseded at once when its header is already there. */
  async function standaloneArrived(row: EventRow): Promise<void> {
    const gifter = gifterOf(row.raw)!;
    const since = new Date(new Date(row.created_at).getTime() - holdMs);
    const header: EventRow | undefined = await knex('events')
      .where({ account_id: row.account_id, platform: 'platform_a', hidden: false })
      .whereRaw("(raw ->> 'community_gift_id') is not null")
      .whereRaw("(raw ->> 'total') = ?", [String(row.raw.total as number)])
      .whereRaw("coalesce(raw ->> 'user_id', raw ->> 'gifter_user_id', raw ->> 'user_name', raw ->> 'gifter_user_name') = ?", [gifter])
      .where('created_at', '>=', since)
      .first();
    if (header) await supersede(knex, [row], header.id);
  }

  /** Patches the bundle's header when complete (or `force`); answers the patched row. */
  async function close(accountId: string, communityGiftId: string, force: boolean): Promise<EventRow | null> {
    return knex.transaction(async (trx) => {
      const header: EventRow | undefined = await trx('events')
        .where({ account_id: accountId, hidden: false })
        .whereRaw("(raw ->> 'community_gift_id') = ?", [communityGiftId])
        .whereRaw("(raw ->> 'total') is not null")
        .whereRaw("(raw -> 'giftRecipients') is null")
        .forUpdate()
        .first();
      if (!header) return null;
      const raw = typeof header.raw === 'string' ? (JSON.parse(header.raw) as Record<string, unknown>) : header.raw;
      const notices: EventRow[] = (
        await trx('events')
          .where({ account_id: accountId, hidden: true })
          .whereRaw("(raw ->> 'community_gift_id') = ?", [communityGiftId])
          .orderBy([{ column: 'created_at' }, { column: 'id' }])
      ).map((r: EventRow) => ({ ...r, raw: typeof r.raw === 'string' ? (JSON.parse(r.raw) as Record<string, unknown>) : r.raw }));
      if (!force && notices.length < (raw.total as number)) return null;
      const patched = { ...raw, giftRecipients: notices.map(recipient) };
      const [row] = await trx('events').where({ id: header.id }).update({ raw: JSON.stringify(patched) }).returning('*');
      return { ...row, raw: patched } as EventRow;
    });
  }

  async function closeAndBroadcast(accountId: string, communityGiftId: string, force: boolean): Promise<void> {
    const patched = await close(accountId, communityGiftId, force);
    if (patched) await options.rebroadcast(patched);
  }

  /**
   * Releases the standalone records whose hold has passed with no header: each is unhidden in a
   * conditional update (one node wins) and broadcast with its own id and `created_at`.
   */
  async function releaseHeld(): Promise<number> {
    const due: EventRow[] = await knex('events')
      .where({ platform: 'platform_a', hidden: true })
      .whereIn('type', [...STANDALONE_TYPES])
      .whereRaw("(raw ->> 'community_gift_id') is null")
      .whereRaw("(raw ->> 'superseded_by') is null")
      .whereRaw("(raw ->> 'total') is not null")
      .where('created_at', '<', new Date(Date.now() - holdMs))
      .limit(500);
    let released = 0;
    for (const candidate of due) {
      const raw = parseRaw(candidate.raw);
      if (!isStandalone(candidate.type, candidate.platform, raw)) continue;
      const [row] = (await knex('events').where({ id: candidate.id, hidden: true }).whereRaw("(raw ->> 'superseded_by') is null").update({ hidden: false }).returning('*')) as EventRow[];
      if (!row) continue;
      released += 1;
      await options.rebroadcast({ ...row, raw: parseRaw(row.raw) });
    }
    return released;
  }

  const hooks: EmitHooks = {
    hidden: ({ type, platform, raw }) => isNotice(platform, raw) || isStandalone(type, platform, raw),
    async settle(row) {
      try {
        if (isStandalone(row.type, row.platform, row.raw)) return await standaloneArrived(row);
        if (!isHeader(row.platform, row.raw) && !isNotice(row.platform, row.raw)) return;
        if (isHeader(row.platform, row.raw)) await headerArrived(row);
        await closeAndBroadcast(row.account_id, giftId(row.raw)!, false);
      } catch (error) {
        log.warn({ err: error }, 'community gift bundling failed');
      }
    },
  };

  return {
    hooks,
    /** Closes every bundle whose header is older than the timeout (the periodic ageing-out). */
    async sweep(): Promise<number> {
      const stale: { account_id: string; gift: string }[] = await knex('events')
        .where({ hidden: false, platform: 'platform_a' })
        .whereRaw("(raw ->> 'community_gift_id') is not null")
        .whereRaw("(raw ->> 'total') is not null")
        .whereRaw("(raw -> 'giftRecipients') is null")
        .where('created_at', '<', new Date(Date.now() - bundleTimeoutMs))
        .select('account_id', knex.raw("(raw ->> 'community_gift_id') as gift"))
        .limit(500);
      for (const bundle of stale) await closeAndBroadcast(bundle.account_id, bundle.gift, true);
      return stale.length + (await releaseHeld());
    },
  };
}

export type GiftBundler = ReturnType<typeof createGiftBundler>;
