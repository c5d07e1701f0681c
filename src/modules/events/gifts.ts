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
}

const giftId = (raw: Record<string, unknown>) => (typeof raw.community_gift_id === 'string' && raw.community_gift_id.length > 0 ? raw.community_gift_id : null);
const isHeader = (platform: string, raw: Record<string, unknown>) => platform === 'platform_a' && giftId(raw) !== null && Number.isInteger(raw.total) && (raw.total as number) > 0;
const isNotice = (platform: string, raw: Record<string, unknown>) => platform === 'platform_a' && giftId(raw) !== null && raw.total === undefined;

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

  const hooks: EmitHooks = {
    hidden: ({ platform, raw }) => isNotice(platform, raw),
    async settle(row) {
      if (!isHeader(row.platform, row.raw) && !isNotice(row.platform, row.raw)) return;
      await closeAndBroadcast(row.account_id, giftId(row.raw)!, false).catch((error: unknown) => log.warn({ err: error }, 'community gift bundling failed'));
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
      return stale.length;
    },
  };
}

export type GiftBundler = ReturnType<typeof createGiftBundler>;
