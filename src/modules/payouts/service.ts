/**
 * Developer payouts (Part 1 "First-party gate", Part 2 "Developer portal" and "Inbound webhook
 * receivers"): the revenue of a payee (a developer profile or a team) per currency, its payout
 * settings, payout requests, and the state changes the payout provider and the payment-connect
 * webhooks report. Gates (first-party, `extension-dev:payouts`) are declared in spec/ and enforced
 * by shared code; this service adds the data-dependent checks: which profile the caller owns, and
 * the team permission (`team-payouts:read` / `:edit`) a team member acts through.
 *
 * Payout states: pending → processing (the provider accepted the batch) → paid | failed |
 * canceled (unclaimed); a payout may also settle straight from pending. A state change and the
 * provider's event id are written in one transaction (`payout_events.event_id` is unique), so a
 * redelivered event changes nothing and notifies nobody twice.
 */
import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import { requireUserId, type AuthContext } from '../../auth/context';
import { AppError } from '../../errors';
import type { Logger } from '../../infra/logger';
import { pageOf, type Page, type PageRequest } from '../../paging';
import type { ModuleApis } from '../contract';
import type { DeveloperApi } from '../developer';
import { payoutMessages as m } from './errors';
import type { Payee, PayoutsRepo } from './repo';
import type { Payout, PayoutSettings, PayoutStatus, RequestPayoutInput, RevenueBalance, UpdatePayoutSettingsInput } from './types';
import { UUID_RE } from '../../infra/ids';

export type { Payout, PayoutSettings, RevenueBalance } from './types';
type Json = Record<string, unknown>;

/** A provider event as the webhooks module parsed it: its id, type and the object it describes. */
export interface ProviderEventInput {
  id: string;
  type: string;
  object: Json;
}

/** What a webhook delivery did, for the receipt log. */
export interface EventOutcome {
  outcome: string;
  accountId?: string | null;
}

export interface PayoutsDeps {
  knex: Knex;
  repo: PayoutsRepo;
  developer: Pick<DeveloperApi, 'profileOfUser' | 'teamsOfUser' | 'hasTeamPermission'>;
  notifications: Pick<ModuleApis['notifications'], 'notify'>;
  /** Brings an account's installs of an extension in line with its subscriptions, in the caller's transaction. */
  extensions: Pick<ModuleApis['extensions'], 'subscriptionChanged'>;
  log: Logger;
  /** Runs in a new payout request's transaction (queues the submission when submission is on). */
  onRequested?: (trx: Knex.Transaction) => Promise<void>;
}

const isObject = (value: unknown): value is Json => typeof value === 'object' && value !== null && !Array.isArray(value);
const objectAt = (value: unknown, key: string): Json => (isObject(value) && isObject(value[key]) ? value[key] : {});
const text = (value: unknown, max = 255): string | null => (typeof value === 'string' && value.length > 0 && value.length <= max ? value : null);
const uuid = (value: unknown): string | null => {
  const s = text(value);
  return s && UUID_RE.test(s) ? s.toLowerCase() : null;
};

/** The payout provider's event types and the state each moves a payout to, from the states it may leave. */
const PAYOUT_EVENTS: Readonly<Record<string, { to: PayoutStatus; from: readonly PayoutStatus[] }>> = {
  'PAYMENT.PAYOUTSBATCH.SUCCESS': { to: 'processing', from: ['pending'] },
  'PAYMENT.PAYOUTS-ITEM.SUCCEEDED': { to: 'paid', from: ['pending', 'processing'] },
  'PAYMENT.PAYOUTS-ITEM.FAILED': { to: 'failed', from: ['pending', 'processing'] },
  'PAYMENT.PAYOUTS-ITEM.UNCLAIMED': { to: 'canceled', from: ['pending', 'processing'] },
};
/** Every state a payout can be in (the spec's enum of `Payout.status`). */
const PAYOUT_STATUSES: readonly PayoutStatus[] = ['pending', 'processing', 'paid', 'failed', 'canceled'];
const TRANSFER_PAID = { to: 'paid' as const, from: ['pending', 'processing'] as const };

export function createPayoutsService(deps: PayoutsDeps) {
  const { knex, repo, developer, notifications, extensions, log } = deps;

  /**
   * The payee the caller acts for: its own developer profile (403 without one), or a team it is a
   * member of (404 otherwise) whose role grants `team-payouts:{action}` (403 otherwise).
   */
  async function payeeOf(auth: AuthContext, teamId: string | null | undefined, action: 'read' | 'edit'): Promise<Payee> {
    const userId = requireUserId(auth);
    if (teamId) {
      const member = (await developer.teamsOfUser(userId)).some((t) => t.id === teamId);
      if (!member) throw AppError.notFound(m.teamNotFound);
      const permission = `team-payouts:${action}`;
      if (!(await developer.hasTeamPermission(teamId, userId, permission))) throw AppError.forbidden(m.missingTeamPermission(permission));
      return { id: teamId, developerId: null, teamId };
    }
    const profile = await developer.profileOfUser(userId);
    if (!profile) throw AppError.forbidden(m.notDeveloper);
    return { id: profile.id, developerId: profile.id, teamId: null };
  }

  /** Per currency: earned (purchases), paid, pending (pending and processing payouts), available. */
  async function balances(payee: Payee, db: Knex | Knex.Transaction = knex): Promise<RevenueBalance[]> {
    const [earned, payouts] = await Promise.all([repo.earned(payee, db), repo.payoutSums(payee.id, db)]);
    const byCurrency = new Map<string, RevenueBalance>();
    const entry = (currency: string) => {
      let b = byCurrency.get(currency);
      if (!b) byCurrency.set(currency, (b = { currency, earnedCents: 0, paidCents: 0, pendingCents: 0, availableCents: 0 }));
      return b;
    };
    for (const e of earned) entry(e.currency).earnedCents += e.amount;
    for (const p of payouts) {
      if (p.status === 'paid') entry(p.currency).paidCents += p.amount;
      else entry(p.currency).pendingCents += p.amount;
    }
    for (const b of byCurrency.values()) b.availableCents = Math.max(0, b.earnedCents - b.paidCents - b.pendingCents);
    return [...byCurrency.values()].sort((a, b) => a.currency.localeCompare(b.currency));
  }

  /** The payout if the caller may read it; anything else is 404, as if absent. */
  async function readable(auth: AuthContext, id: string): Promise<Payout> {
    const userId = requireUserId(auth);
    const row = UUID_RE.test(id) ? await repo.payout(id) : undefined;
    if (!row) throw AppError.notFound(m.payoutNotFound);
    if (row.teamId) {
      if (!(await developer.teamsOfUser(userId)).some((t) => t.id === row.teamId)) throw AppError.notFound(m.payoutNotFound);
      if (!(await developer.hasTeamPermission(row.teamId, userId, 'team-payouts:read'))) throw AppError.forbidden(m.missingTeamPermission('team-payouts:read'));
      return row;
    }
    if ((await developer.profileOfUser(userId))?.id !== row.developerId) throw AppError.notFound(m.payoutNotFound);
    return row;
  }

  /**
   * Moves a locked payout to `to` once per provider event: the event id is claimed in the same
   * transaction, the requester is notified in it too. Answers the receipt outcome.
   */
  async function move(trx: Knex.Transaction, row: Payout, event: ProviderEventInput, rule: { to: PayoutStatus; from: readonly PayoutStatus[] }, patch: { provider_batch_id?: string | null; provider_item_id?: string | null; failure_reason?: string | null }): Promise<string> {
    // The provider's ids are learned from the first event that carries them.
    const ids: { provider_batch_id?: string; provider_item_id?: string } = {};
    if (patch.provider_batch_id && !row.providerBatchId) ids.provider_batch_id = patch.provider_batch_id;
    if (patch.provider_item_id && !row.providerItemId) ids.provider_item_id = patch.provider_item_id;
    if (!rule.from.includes(row.status)) {
      if (Object.keys(ids).length > 0) await repo.updatePayout(trx, row.id, ids);
      return `payout_unchanged_${row.status}`;
    }
    const claimed = await repo.claimEvent(trx, { id: randomUUID(), payout_id: row.id, event_id: event.id, event_type: event.type, from_status: row.status, to_status: rule.to });
    if (!claimed) return 'payout_event_duplicate';
    const failureReason = rule.to === 'failed' || rule.to === 'canceled' ? (patch.failure_reason ?? null) : null;
    await repo.updatePayout(trx, row.id, { ...ids, status: rule.to, failure_reason: failureReason, ...(rule.to === 'paid' ? { paid_at: trx.fn.now() } : {}) });
    if (row.requestedBy) {
      await notifications.notify(
        {
          userId: row.requestedBy,
          type: 'payout',
          data: { payoutId: row.id, status: rule.to, previousStatus: row.status, amountCents: row.amountCents, currency: row.currency, failureReason, teamId: row.teamId },
        },
        trx,
      );
    }
    log.info({ payout_id: row.id, from: row.status, to: rule.to, event_id: event.id }, 'payout state changed');
    return `payout_${rule.to}`;
  }

  // ---------------------------------------------------------------- payment-connect events

  async function accountUpdated(event: ProviderEventInput): Promise<EventOutcome> {
    const o = event.object;
    const connectId = text(o.id);
    if (!connectId) return { outcome: 'ignored_no_account_id' };
    const meta = objectAt(o, 'metadata');
    return knex.transaction(async (trx) => {
      let row = await repo.accountByConnect(connectId, trx);
      if (!row) {
        const developerId = uuid(meta.developer_id);
        const teamId = developerId ? null : uuid(meta.team_id);
        const payee: Payee | null = developerId && (await repo.payeeExists('developer', developerId, trx)) ? { id: developerId, developerId, teamId: null } : teamId && (await repo.payeeExists('team', teamId, trx)) ? { id: teamId, developerId: null, teamId } : null;
        if (!payee) return { outcome: 'no_developer' };
        await repo.ensureAccount(trx, payee);
        await repo.unlinkConnect(trx, connectId, payee.id);
        row = (await repo.account(payee.id, trx))!;
      }
      await repo.updateAccount(trx, row.payeeId, {
        connect_account_id: connectId,
        connect_charges_enabled: o.charges_enabled === true,
        connect_payouts_enabled: o.payouts_enabled === true,
        connect_details_submitted: o.details_submitted === true,
        connect_updated_at: new Date(),
      });
      return { outcome: 'connect_account_updated' };
    });
  }

  async function transferPaid(event: ProviderEventInput): Promise<EventOutcome> {
    const payoutId = uuid(objectAt(event.object, 'metadata').payout_id);
    if (!payoutId) return { outcome: 'ignored_no_payout' };
    return knex.transaction(async (trx) => {
      const row = await repo.lockPayout(trx, { ids: [payoutId], itemId: null, batchId: null });
      if (!row) return { outcome: 'payout_not_found' };
      return { outcome: await move(trx, row, event, TRANSFER_PAID, {}) };
    });
  }

  const periodEnd = (o: Json): Date | null => {
    const seconds = o.current_period_end;
    return typeof seconds === 'number' && Number.isFinite(seconds) && seconds > 0 && seconds < 1e11 ? new Date(seconds * 1000) : null;
  };

  /**
   * Records a subscription change and, in the same transaction, lets the extensions module bring
   * the account's installs of the extension in line with it (disabled while canceled or past due,
   * their tokens revoked); the sockets of revoked tokens close once it committed.
   */
  async function recordSubscription(apply: (trx: Knex.Transaction) => Promise<EventOutcome & { extensionId?: string }>): Promise<EventOutcome> {
    const afterCommit: (() => Promise<void>)[] = [];
    const result = await knex.transaction(async (trx) => {
      const outcome = await apply(trx);
      if (outcome.extensionId && outcome.accountId) afterCommit.push(await extensions.subscriptionChanged({ extensionId: outcome.extensionId, accountId: outcome.accountId }, trx));
      return { outcome: outcome.outcome, accountId: outcome.accountId ?? null };
    });
    for (const step of afterCommit) await step();
    return result;
  }

  async function subscriptionCreated(event: ProviderEventInput, status: string): Promise<EventOutcome> {
    const o = event.object;
    const subscriptionId = text(o.id);
    const meta = objectAt(o, 'metadata');
    const extensionId = uuid(meta.extension_id);
    if (!subscriptionId) return { outcome: 'ignored_no_subscription_id' };
    return recordSubscription(async (trx) => {
      const known = await repo.subscription(subscriptionId, trx, true);
      if (status === 'canceled' && known) {
        await repo.updateSubscription(trx, subscriptionId, { status, canceled_at: new Date() });
        return { outcome: 'subscription_canceled', accountId: known.accountId, extensionId: known.extensionId };
      }
      if (!extensionId || !(await repo.extensionExists(extensionId, trx))) return { outcome: status === 'canceled' ? 'subscription_not_found' : 'ignored_unknown_extension' };
      const accountId = uuid(meta.account_id);
      const knownAccount = accountId && (await repo.accountExists(accountId, trx)) ? accountId : null;
      await repo.saveSubscription(trx, {
        subscription_id: subscriptionId,
        extension_id: extensionId,
        account_id: knownAccount,
        customer_id: text(o.customer),
        status: status === 'canceled' ? status : (text(o.status, 40) ?? 'active'),
        current_period_end: periodEnd(o),
        ...(status === 'canceled' ? { canceled_at: new Date() } : {}),
      });
      return { outcome: status === 'canceled' ? 'subscription_canceled' : 'subscription_recorded', accountId: knownAccount, extensionId };
    });
  }

  async function invoicePaid(event: ProviderEventInput, paid: boolean): Promise<EventOutcome> {
    const o = event.object;
    const subscriptionId = text(o.subscription) ?? text(objectAt(o, 'subscription').id);
    if (!subscriptionId) return { outcome: 'ignored_no_subscription' };
    return recordSubscription(async (trx) => {
      const row = await repo.subscription(subscriptionId, trx, true);
      if (!row) return { outcome: 'subscription_not_found' };
      if (row.status === 'canceled') {
        await repo.updateSubscription(trx, subscriptionId, { last_invoice_status: paid ? 'paid' : 'failed' });
        return { outcome: 'subscription_canceled', accountId: row.accountId };
      }
      await repo.updateSubscription(trx, subscriptionId, { status: paid ? 'active' : 'past_due', last_invoice_status: paid ? 'paid' : 'failed' });
      return { outcome: paid ? 'subscription_active' : 'subscription_past_due', accountId: row.accountId, extensionId: row.extensionId };
    });
  }

  return {
    async revenue(auth: AuthContext, query: { teamId?: string }): Promise<RevenueBalance[]> {
      return balances(await payeeOf(auth, query.teamId, 'read'));
    },

    async settings(auth: AuthContext, query: { teamId?: string }): Promise<PayoutSettings> {
      const payee = await payeeOf(auth, query.teamId, 'read');
      return repo.settings(payee);
    },

    async updateSettings(auth: AuthContext, input: UpdatePayoutSettingsInput): Promise<PayoutSettings> {
      const payee = await payeeOf(auth, input.teamId, 'edit');
      await knex.transaction(async (trx) => {
        await repo.ensureAccount(trx, payee);
        await repo.updateAccount(trx, payee.id, { payout_email: input.payoutEmail.trim() });
      });
      return repo.settings(payee);
    },

    async list(auth: AuthContext, query: { teamId?: string; status?: PayoutStatus }, paging: PageRequest): Promise<Page<Payout>> {
      // REST's validator refuses any other status before this; GraphQL's `status` is a String.
      if (query.status !== undefined && !PAYOUT_STATUSES.includes(query.status)) throw AppError.validation(m.badStatus, { fields: [{ field: 'status', message: m.badStatus }] });
      const payee = await payeeOf(auth, query.teamId, 'read');
      const { rows, total } = await repo.payouts(payee.id, query.status, paging);
      return pageOf(rows, total, paging);
    },

    async get(auth: AuthContext, id: string): Promise<Payout> {
      return readable(auth, id);
    },

    /** A payout of available revenue, under the payee's row lock so two requests cannot both take it. */
    async request(auth: AuthContext, input: RequestPayoutInput): Promise<Payout> {
      const payee = await payeeOf(auth, input.teamId, 'edit');
      const currency = input.currency.toUpperCase();
      const id = randomUUID();
      await knex.transaction(async (trx) => {
        const account = await repo.lockAccount(trx, payee.id);
        if (!account?.payoutEmail) throw AppError.validation(m.payoutEmailRequired, { fields: [{ field: 'payout_email', message: m.payoutEmailRequired }] });
        const available = (await balances(payee, trx)).find((b) => b.currency === currency)?.availableCents ?? 0;
        if (available <= 0) throw AppError.validation(m.noRevenue(currency), { fields: [{ field: 'currency', message: m.noRevenue(currency) }] });
        const amount = input.amountCents ?? available;
        if (amount > available) throw AppError.validation(m.amountExceedsAvailable, { fields: [{ field: 'amount_cents', message: m.amountExceedsAvailable }] });
        await repo.insertPayout(trx, { id, payee_id: payee.id, developer_id: payee.developerId, team_id: payee.teamId, requested_by: auth.userId, amount_cents: amount, currency, payout_email: account.payoutEmail });
        await deps.onRequested?.(trx);
      });
      return (await repo.payout(id))!;
    },

    /** A payout provider event: moves the payout it names (unknown payouts change nothing). */
    async payoutEvent(event: ProviderEventInput): Promise<EventOutcome> {
      const rule = Object.hasOwn(PAYOUT_EVENTS, event.type) ? PAYOUT_EVENTS[event.type]! : null;
      if (!rule) return { outcome: 'ignored' };
      const r = event.object;
      const header = objectAt(r, 'batch_header');
      const batch = rule.to === 'processing';
      const batchId = batch ? text(header.payout_batch_id) : text(r.payout_batch_id);
      const itemId = batch ? null : text(r.payout_item_id);
      const senderIds = batch ? [uuid(objectAt(header, 'sender_batch_header').sender_batch_id)] : [uuid(objectAt(r, 'payout_item').sender_item_id), uuid(objectAt(r, 'sender_batch_header').sender_batch_id)];
      const errors = objectAt(r, 'errors');
      const reason = text(errors.name, 500) ?? text(errors.message, 500) ?? (rule.to === 'canceled' ? 'UNCLAIMED' : rule.to === 'failed' ? text(r.transaction_status, 500) : null);
      return knex.transaction(async (trx) => {
        const row = await repo.lockPayout(trx, { ids: senderIds.filter((s): s is string => s !== null), itemId, batchId });
        if (!row) return { outcome: 'payout_not_found' };
        return { outcome: await move(trx, row, event, rule, { provider_batch_id: batchId, provider_item_id: itemId, failure_reason: reason }) };
      });
    },

    /** A payment-connect event other than purchases and refunds (the extensions module's). */
    async connectEvent(event: ProviderEventInput): Promise<EventOutcome> {
      switch (event.type) {
        case 'account.updated':
          return accountUpdated(event);
        case 'transfer.paid':
          return transferPaid(event);
        case 'customer.subscription.created':
          return subscriptionCreated(event, 'active');
        case 'customer.subscription.deleted':
          return subscriptionCreated(event, 'canceled');
        case 'invoice.payment_succeeded':
          return invoicePaid(event, true);
        case 'invoice.payment_failed':
          return invoicePaid(event, false);
        default:
          return { outcome: 'ignored' };
      }
    },

    /** The subscription status of an extension for an account (`active`, `past_due`, `canceled`, ...), or null. */
    async subscriptionStatus(extensionId: string, accountId: string): Promise<string | null> {
      return (await repo.subscriptionOf(extensionId, accountId))?.status ?? null;
    },

    /** A payout's state timeline (operators and tests). */
    events: (payoutId: string) => repo.events(payoutId),

    /**
     * Moves a locked payout by a change of our own (its submission to the provider, a refusal, a
     * give-up) as provider events move it: once per `event.id`, with the requester's notification,
     * in the caller's transaction. For ./submitter.ts; not part of the module's API.
     */
    change: move,
  };
}

export type PayoutsService = ReturnType<typeof createPayoutsService>;
