/**
 * Storage of the payouts module (knex): payout accounts, payout requests and their timeline,
 * extension subscriptions. Revenue reads the extensions module's `extensions` and
 * `extension_purchases` tables (read-only: its API has no sum by owner, and the sum must run in
 * the request's transaction, under the payee's row lock).
 */
import type { Knex } from 'knex';
import { rowMapping, schemaRows, tableColumns, type Mapped, type RowValue } from '../../infra/db/rows';
import type { Payout, PayoutAccount, PayoutSettings, PayoutStatus } from './types';

type Db = Knex | Knex.Transaction;

export type { PayoutStatus } from './types';

/** A payout account as stored: the payee's settings keyed by the payee, updated once written. */
const accountOf = schemaRows('PayoutSettings', { omit: ['developer_id', 'team_id', 'updated_at'], extra: tableColumns('payout_accounts', ['payee_id', 'updated_at']) });
const payoutOf = schemaRows('Payout');

/** The migration's columns of `extension_subscriptions` but its bookkeeping times. */
const subscriptionColumns = tableColumns('extension_subscriptions', ['subscription_id', 'extension_id', 'account_id', 'customer_id', 'status', 'last_invoice_status', 'current_period_end', 'canceled_at']);
/** An extension subscription as stored (not on the wire: payment-connect events move it, installs read its status). */
export type ExtensionSubscription = Mapped<typeof subscriptionColumns>;
const subscriptionOf = rowMapping(subscriptionColumns);

const one = <T>(mapping: { map(row: Record<string, unknown>): T }, row: unknown): T | undefined => (row ? mapping.map(row as Record<string, unknown>) : undefined);

/** A pending payout a node holds for one try at the provider. */
export interface SubmissionRow {
  id: string;
  amountCents: number;
  currency: string;
  payoutEmail: string;
  /** Tries made, this one included. */
  attempts: number;
}

/** Who is paid: a payout profile, with the developer or team the spec's settings name it by. */
export type Payee = { id: string } & Pick<PayoutSettings, 'developerId' | 'teamId'>;

/** The settings the wire shows; a payee without a stored account shows nothing set, nothing connected. */
const settingsOf = schemaRows('PayoutSettings', {
  from: {
    developer_id: 'p.developer_id',
    team_id: 'p.team_id',
    payout_email: 'a.payout_email',
    connect_account_id: 'a.connect_account_id',
    connect_charges_enabled: 'coalesce(a.connect_charges_enabled, false)',
    connect_payouts_enabled: 'coalesce(a.connect_payouts_enabled, false)',
    connect_details_submitted: 'coalesce(a.connect_details_submitted, false)',
    connect_updated_at: 'a.connect_updated_at',
    updated_at: 'a.updated_at',
  },
});

/** Revenue and payout sums per currency (not on the wire: the service adds them up into balances). */
const earnedOf = rowMapping({ currency: { type: 'text', from: 'p.currency' }, amount: { type: 'bigint', from: 'coalesce(sum(p.amount_cents), 0)' } } as const);
export type Sums = RowValue<typeof earnedOf>;
const payoutSumOf = rowMapping<{ status: 'text'; currency: 'text'; amount: { type: 'bigint'; from: string } }, Sums & { status: PayoutStatus }>({
  status: 'text',
  currency: 'text',
  amount: { type: 'bigint', from: 'coalesce(sum(amount_cents), 0)' },
});

export function createPayoutsRepo(knex: Knex) {
  return {
    /** payout_accounts.get */
    async account(payeeId: string, db: Db = knex): Promise<PayoutAccount | undefined> {
      return one(accountOf, await db('payout_accounts').where({ payee_id: payeeId }).first(db.raw(accountOf.select)));
    },
    /** payout_accounts.settings: the payee's settings as the wire shows them */
    async settings(payee: Payee, db: Db = knex): Promise<PayoutSettings> {
      const result = await db.raw(
        `select ${settingsOf.select} from (select ?::uuid as payee_id, ?::uuid as developer_id, ?::uuid as team_id) p left join payout_accounts a on a.payee_id = p.payee_id`,
        [payee.id, payee.developerId, payee.teamId],
      );
      return settingsOf.map(((result as { rows?: Record<string, unknown>[] }).rows ?? (result as Record<string, unknown>[]))[0]!);
    },
    /** payout_accounts.lock: the payee's row, locked for the transaction (serialises payout requests) */
    async lockAccount(db: Knex.Transaction, payeeId: string): Promise<PayoutAccount | undefined> {
      return one(accountOf, await db('payout_accounts').where({ payee_id: payeeId }).forUpdate().first(db.raw(accountOf.select)));
    },
    /** payout_accounts.byConnectAccount */
    async accountByConnect(connectAccountId: string, db: Db = knex): Promise<PayoutAccount | undefined> {
      return one(accountOf, await db('payout_accounts').where({ connect_account_id: connectAccountId }).first(db.raw(accountOf.select)));
    },
    /** payout_accounts.ensure: the payee's row exists (no change when it does) */
    async ensureAccount(db: Db, payee: Payee): Promise<void> {
      await db('payout_accounts').insert({ payee_id: payee.id, developer_id: payee.developerId, team_id: payee.teamId }).onConflict('payee_id').ignore();
    },
    /** payout_accounts.update */
    async updateAccount(
      db: Db,
      payeeId: string,
      patch: Partial<{ payout_email: string; connect_account_id: string; connect_charges_enabled: boolean; connect_payouts_enabled: boolean; connect_details_submitted: boolean; connect_updated_at: Date }>,
    ): Promise<void> {
      await db('payout_accounts').where({ payee_id: payeeId }).update({ ...patch, updated_at: db.fn.now() });
    },
    /** payout_accounts.unlinkConnect: a connected account id moves to its latest payee */
    async unlinkConnect(db: Db, connectAccountId: string, keepPayeeId: string): Promise<void> {
      await db('payout_accounts').where({ connect_account_id: connectAccountId }).whereNot({ payee_id: keepPayeeId }).update({ connect_account_id: null, updated_at: db.fn.now() });
    },
    /** developer_profiles.exists / developer_teams.exists (the developer module's rows, read-only) */
    async payeeExists(kind: 'developer' | 'team', id: string, db: Db = knex): Promise<boolean> {
      return Boolean(await db(kind === 'developer' ? 'developer_profiles' : 'developer_teams').where({ id }).first('id'));
    },

    /** extension_purchases.earnedByPayee: completed, unrefunded purchases of the payee's extensions, per currency */
    async earned(payee: Payee, db: Db = knex): Promise<Sums[]> {
      const rows = await db('extension_purchases as p')
        .join('extensions as e', 'e.id', 'p.extension_id')
        .where('p.status', 'completed')
        .andWhere(payee.developerId ? { 'e.developer_id': payee.developerId } : { 'e.team_id': payee.teamId })
        .groupBy('p.currency')
        .select(db.raw(earnedOf.select));
      return (rows as Record<string, unknown>[]).map(earnedOf.map);
    },
    /** payouts.sumsByStatus: per status and currency */
    async payoutSums(payeeId: string, db: Db = knex): Promise<(Sums & { status: PayoutStatus })[]> {
      const rows = await db('payouts')
        .where({ payee_id: payeeId })
        .whereIn('status', ['pending', 'processing', 'paid'])
        .groupBy('status', 'currency')
        .select(db.raw(payoutSumOf.select));
      return (rows as Record<string, unknown>[]).map(payoutSumOf.map);
    },

    /** payouts.insert */
    async insertPayout(
      db: Knex.Transaction,
      row: { id: string; payee_id: string; developer_id: string | null; team_id: string | null; requested_by: string | null; amount_cents: number; currency: string; payout_email: string },
    ): Promise<void> {
      await db('payouts').insert({ ...row, status: 'pending' });
    },
    /** payouts.get */
    async payout(id: string, db: Db = knex): Promise<Payout | undefined> {
      return one(payoutOf, await db('payouts').where({ id }).first(db.raw(payoutOf.select)));
    },
    /** payouts.page: a payee's, newest first */
    async payouts(payeeId: string, status: PayoutStatus | undefined, page: { limit: number; offset: number }): Promise<{ rows: Payout[]; total: number }> {
      const base = () => knex('payouts').where({ payee_id: payeeId }).modify((q) => (status ? q.where({ status }) : q));
      const [rows, counted] = await Promise.all([
        base().orderBy([{ column: 'created_at', order: 'desc' }, { column: 'id', order: 'desc' }]).limit(page.limit).offset(page.offset).select(knex.raw(payoutOf.select)),
        base().count<{ count: string | number }[]>('* as count'),
      ]);
      return { rows: (rows as Record<string, unknown>[]).map((row) => payoutOf.map(row)), total: Number(counted[0]?.count ?? 0) };
    },
    /** payouts.lockForEvent: a payout by our id, else the provider's item id, else batch id; locked */
    async lockPayout(db: Knex.Transaction, ref: { ids: string[]; itemId: string | null; batchId: string | null }): Promise<Payout | undefined> {
      const columns = db.raw(payoutOf.select);
      for (const id of ref.ids) {
        const row = await db('payouts').where({ id }).forUpdate().first(columns);
        if (row) return payoutOf.map(row);
      }
      if (ref.itemId) {
        const row = await db('payouts').where({ provider_item_id: ref.itemId }).forUpdate().first(columns);
        if (row) return payoutOf.map(row);
      }
      if (ref.batchId) {
        const row = await db('payouts').where({ provider_batch_id: ref.batchId }).orderBy('created_at').forUpdate().first(columns);
        if (row) return payoutOf.map(row);
      }
      return undefined;
    },
    /** payouts.update */
    async updatePayout(db: Knex.Transaction, id: string, patch: Partial<{ status: PayoutStatus; provider_batch_id: string; provider_item_id: string; failure_reason: string | null; paid_at: unknown }>): Promise<void> {
      await db('payouts').where({ id }).update({ ...patch, updated_at: db.fn.now() });
    },
    /**
     * payouts.claimDue: takes up to `limit` pending payouts due for a try and not held by a live
     * try, for this node. Rows another node is claiming are skipped (FOR UPDATE SKIP LOCKED), and
     * the hold commits before anything is sent, so two nodes (or two runs on one) never submit one
     * payout at once; a hold that expired (its node died mid-try) makes the row due again. The
     * status stays `pending` on the wire: a try in flight is not a state the developer sees.
     */
    async claimDue(nodeId: string, limit: number, holdMs: number, maxAttempts: number): Promise<SubmissionRow[]> {
      const result = await knex.raw<{ rows: Record<string, unknown>[] } | Record<string, unknown>[]>(
        `update payouts
            set submit_attempts = submit_attempts + 1, locked_by = ?, locked_until = now() + (?::int * interval '1 millisecond')
          where id in (
            select id from payouts
             where status = 'pending' and next_attempt_at <= now() and (locked_until is null or locked_until < now()) and submit_attempts < ?
             order by next_attempt_at
             limit ?
             for update skip locked)
        returning id, amount_cents, currency, payout_email, submit_attempts`,
        [nodeId, Math.round(holdMs), maxAttempts, limit],
      );
      const rows = Array.isArray(result) ? result : result.rows;
      return rows.map((row) => ({ id: String(row.id), amountCents: Number(row.amount_cents), currency: String(row.currency), payoutEmail: String(row.payout_email), attempts: Number(row.submit_attempts) }));
    },
    /** payouts.lockHeld: the payout this node's try holds (same node, same try), locked; undefined when the hold was lost */
    async lockHeld(db: Knex.Transaction, held: Pick<SubmissionRow, 'id' | 'attempts'>, nodeId: string): Promise<Payout | undefined> {
      return one(payoutOf, await db('payouts').where({ id: held.id, locked_by: nodeId, submit_attempts: held.attempts }).forUpdate().first(db.raw(payoutOf.select)));
    },
    /** payouts.release: the try is over (submitted, settled or failed): no hold, no error */
    async releaseHold(db: Db, id: string, patch: Partial<{ submitted_at: unknown; last_error: string | null }> = {}): Promise<void> {
      await db('payouts').where({ id }).update({ locked_by: null, locked_until: null, ...patch });
    },
    /** payouts.retryLater: due again `delayMs` from now with the try's error, while this node's try still holds it */
    async retryLater(held: Pick<SubmissionRow, 'id' | 'attempts'>, nodeId: string, delayMs: number, error: string): Promise<boolean> {
      const n = await knex('payouts')
        .where({ id: held.id, status: 'pending', locked_by: nodeId, submit_attempts: held.attempts })
        .update({ next_attempt_at: knex.raw("now() + (?::int * interval '1 millisecond')", [Math.round(delayMs)]), last_error: error.slice(0, 500), locked_by: null, locked_until: null });
      return n > 0;
    },
    /** payouts.abandoned: pending payouts whose last try's node died holding them, with no try left */
    async abandoned(maxAttempts: number, limit: number): Promise<string[]> {
      const rows: { id: string }[] = await knex('payouts').where({ status: 'pending' }).where('locked_until', '<', knex.fn.now()).where('submit_attempts', '>=', maxAttempts).limit(limit).select('id');
      return rows.map((r) => r.id);
    },
    /** payouts.lockById: a payout by id, locked (the sweep's give-up of a dead node's last try) */
    async lockById(db: Knex.Transaction, id: string): Promise<Payout | undefined> {
      return one(payoutOf, await db('payouts').where({ id }).forUpdate().first(db.raw(payoutOf.select)));
    },
    /** payout_events.claim: false when this provider event id was applied before */
    async claimEvent(db: Knex.Transaction, row: { id: string; payout_id: string; event_id: string; event_type: string; from_status: string; to_status: string }): Promise<boolean> {
      const inserted: unknown[] = await db('payout_events').insert(row).onConflict('event_id').ignore().returning('id');
      return inserted.length > 0;
    },
    /** payout_events.ofPayout, oldest first (tests and operators) */
    events(payoutId: string): Promise<{ event_id: string; event_type: string; from_status: string; to_status: string }[]> {
      return knex('payout_events').where({ payout_id: payoutId }).orderBy('created_at').select('event_id', 'event_type', 'from_status', 'to_status');
    },

    /** extensions.exists (the extensions module's rows, read-only) */
    async extensionExists(id: string, db: Db = knex): Promise<boolean> {
      return Boolean(await db('extensions').where({ id }).first('id'));
    },
    /** accounts.exists */
    async accountExists(id: string, db: Db = knex): Promise<boolean> {
      return Boolean(await db('accounts').where({ id }).first('id'));
    },
    /** extension_subscriptions.get */
    async subscription(id: string, db: Db = knex, lock = false): Promise<ExtensionSubscription | undefined> {
      const query = db('extension_subscriptions').where({ subscription_id: id });
      return one(subscriptionOf, await (lock ? query.forUpdate() : query).first(db.raw(subscriptionOf.select)));
    },
    /** extension_subscriptions.latest: an account's newest subscription of an extension */
    async subscriptionOf(extensionId: string, accountId: string, db: Db = knex): Promise<ExtensionSubscription | undefined> {
      return one(subscriptionOf, await db('extension_subscriptions').where({ extension_id: extensionId, account_id: accountId }).orderBy('updated_at', 'desc').first(db.raw(subscriptionOf.select)));
    },
    /** extension_subscriptions.upsert */
    async saveSubscription(
      db: Knex.Transaction,
      row: {
      subscription_id: string;
      extension_id: string;
      account_id: string | null;
      customer_id: string | null;
      status: string;
      current_period_end: Date | null;
      canceled_at?: unknown;
    },
    ): Promise<void> {
      await db('extension_subscriptions')
        .insert({ ...row, updated_at: db.fn.now() })
        .onConflict('subscription_id')
        .merge({ status: row.status, customer_id: row.customer_id, current_period_end: row.current_period_end, ...(row.canceled_at !== undefined ? { canceled_at: row.canceled_at } : {}), updated_at: db.fn.now() });
    },
    /** extension_subscriptions.update: true when the subscription exists */
    async updateSubscription(db: Knex.Transaction, id: string, patch: Partial<{ status: string; last_invoice_status: string; canceled_at: unknown }>): Promise<boolean> {
      const updated: unknown[] = await db('extension_subscriptions').where({ subscription_id: id }).update({ ...patch, updated_at: db.fn.now() }).returning('subscription_id');
      return updated.length > 0;
    },
  };
}

export type PayoutsRepo = ReturnType<typeof createPayoutsRepo>;
