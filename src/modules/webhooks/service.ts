/**
 * The inbound webhook receivers (Part 2 "Inbound webhook receivers"; DESIGN.md "Webhook wire
 * formats"). Each verifies the raw bytes first (signature, timestamp tolerance), then parses, then
 * resolves the account from the signed payload and hands the result to the module that owns it:
 * the platforms module for the platforms' bodies (it reads them against spec/platforms/ and
 * delivers them to events and the chat and moderation-log pipelines), events (`emitFor`,
 * idempotent on the platform's id) for the shops, the
 * extension purchases, the account plans, the payouts module (payout requests, connected
 * accounts, extension subscriptions). Payment and payout deliveries are kept in the receipt log,
 * once per provider event id. A valid delivery that matches no connection, or has a type
 * nobody handles, is acknowledged with 200. Gates are not checked here: the receivers are public.
 */
import { createHash, randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import type { components } from '../../../generated/openapi';
import type { AuthContext } from '../../auth/context';
import type { Config } from '../../config/config';
import { AppError, messages } from '../../errors';
import type { InboundRequest } from '../../http/context';
import { inputProblem, inputProblemError } from '../../http/input-guard';
import type { Logger } from '../../infra/logger';
import type { ModuleApis } from '../contract';
import type { SignedPlatform } from '../platforms';
import type { ExtensionsApi } from '../extensions';
import { webhookMessages } from './errors';
import { certUrlAllowed, payoutCertDomain, type PayoutVerifier } from './payout';
import type { BillingRow, ShopConnection, WebhooksRepo } from './repo';
import { hmac, hubSignatureValid, loadPublicKey, parseProviderSignature, parseTimestamp, providerSignatureValid, rsaSignatureValid, safeEqual, withinTolerance } from './verify';
import { UUID_RE } from '../../infra/ids';

type Json = Record<string, unknown>;

export type WebhookAck = components['responses']['WebhookReceived']['content']['application/json'];
export type { ShopConnection } from './repo';

export interface WebhooksDeps {
  config: Readonly<Config>;
  log: Logger;
  knex: Knex;
  repo: WebhooksRepo;
  events: Pick<ModuleApis['events'], 'emitFor'>;
  /** The platforms' inbound readers (WebSub entries, platform_c bodies) and their delivery (events, chat pipeline, stream notices). */
  platforms: Pick<ModuleApis['platforms'], 'readWebSub' | 'platformC' | 'signed' | 'deliver'>;
  extensions: ExtensionsApi;
  accounts: Pick<ModuleApis['accounts'], 'findOrCreateUser' | 'createAccountFor'>;
  plans: Pick<ModuleApis['plans'], 'billingPlan' | 'freePlan' | 'applyBillingPlan'>;
  features: Pick<ModuleApis['features'], 'invalidate'>;
  audit: Pick<ModuleApis['audit'], 'record'>;
  /** Payout requests, connected accounts and extension subscriptions the payout and connect events move. */
  payouts: Pick<ModuleApis['payouts'], 'payoutEvent' | 'connectEvent'>;
  payout: PayoutVerifier;
  /** Unix seconds (tests leave it alone: the tolerance edges are signed relative to the clock). */
  now?: () => number;
}

const ACK: WebhookAck = Object.freeze({ received: true as const });

const isObject = (value: unknown): value is Json => typeof value === 'object' && value !== null && !Array.isArray(value);
const objectAt = (value: unknown, key: string): Json => (isObject(value) && isObject(value[key]) ? value[key] : {});
/** A non-empty string, or a finite number as a string (platform ids arrive as either). */
const text = (value: unknown): string | null => (typeof value === 'string' && value.length > 0 ? value : typeof value === 'number' && Number.isFinite(value) ? String(value) : null);
const uuid = (value: unknown): string | null => {
  const s = text(value);
  return s && UUID_RE.test(s) ? s.toLowerCase() : null;
};
const sha256 = (data: Buffer | string) => createHash('sha256').update(data).digest('hex');
/** An idempotency key within the 255 characters the stores allow. */
const externalKey = (prefix: string, id: string) => (prefix.length + id.length <= 255 ? `${prefix}${id}` : `${prefix}sha256:${sha256(id)}`);
const unauthorized = (message: string) => AppError.unauthorized(message);

/** `Shop.Example.com.`, `https://shop.example.com/admin` → `shop.example.com`; '' when it is no host. */
export function normaliseShopDomain(value: string): string {
  let host = value.trim().toLowerCase();
  host = host.replace(/^[a-z][a-z0-9+.-]*:\/\//, '');
  host = host.split(/[/?#]/, 1)[0] ?? '';
  host = host.replace(/:\d*$/, '').replace(/\.+$/, '');
  return host.length > 0 && host.length <= 255 && /^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*$/.test(host) ? host : '';
}

const SHOP_TOPICS: Readonly<Record<string, string>> = {
  'orders/create': 'shop_platform:order',
  'orders/paid': 'shop_platform:order_paid',
  'products/create': 'shop_platform:product',
};

/** Connect events the payouts module applies (connected accounts, transfers, extension subscriptions). */
const CONNECT_STATE = new Set(['transfer.paid', 'customer.subscription.created', 'customer.subscription.deleted', 'invoice.payment_succeeded', 'invoice.payment_failed', 'account.updated']);

interface ProviderEvent {
  id: string;
  type: string;
  object: Json;
  payload: Json;
}

interface Outcome {
  outcome: string;
  accountId?: string | null;
}

export function createWebhooksService(deps: WebhooksDeps) {
  const { config, log, knex, repo } = deps;
  const now = deps.now ?? (() => Date.now() / 1000);
  const hooks = config.webhooks;
  const payments = config.payments;
  const platformCKey = hooks.platform_c_public_key ? loadPublicKey(hooks.platform_c_public_key) : null;
  if (hooks.platform_c_public_key && !platformCKey) log.error({}, 'webhooks.platform_c_public_key does not parse: platform_c deliveries are refused');
  const shopSecrets = new Map(Object.entries(hooks.shop_platform_secrets).map(([domain, secret]) => [normaliseShopDomain(domain), secret]));
  const certDomain = payoutCertDomain(payments.payout_cert_domain, payments.payout_api_url);

  /** A JSON object, or 400; unstorable strings and over-deep nesting are refused as at the edge. */
  function parseObject(body: Buffer): Json {
    let value: unknown;
    try {
      value = JSON.parse(body.toString('utf8'));
    } catch {
      throw new AppError('BAD_REQUEST', messages.malformedJson);
    }
    if (!isObject(value)) throw new AppError('BAD_REQUEST', webhookMessages.payloadNotObject);
    const problem = inputProblem(value);
    if (problem) throw inputProblemError(problem, 'body');
    return value;
  }

  function providerEvent(body: Buffer): ProviderEvent {
    const payload = parseObject(body);
    const id = text(payload.id);
    const type = text(payload.event_type) ?? text(payload.type);
    if (!id || !type) throw new AppError('BAD_REQUEST', webhookMessages.eventFieldsMissing);
    const data = objectAt(payload, 'data');
    const object = isObject(data.object) ? data.object : objectAt(payload, 'resource');
    return { id, type: type.slice(0, 100), object, payload };
  }

  /** `Payment-Provider-Signature: t=…,v1=…` over `<t>.<body>`; an unset secret fails closed. */
  function verifyPaymentSignature(inbound: InboundRequest, secret: string | null): void {
    if (!secret) {
      if (payments.allow_unsigned_webhooks) return;
      throw unauthorized(webhookMessages.secretNotConfigured);
    }
    const header = inbound.header('payment-provider-signature');
    if (!header) throw unauthorized(webhookMessages.signatureMissing);
    const parsed = parseProviderSignature(header);
    if (!parsed) throw unauthorized(webhookMessages.signatureInvalid);
    if (!withinTolerance(parsed.timestamp, now())) throw unauthorized(webhookMessages.timestampOutsideTolerance);
    if (!providerSignatureValid(parsed, secret, inbound.body)) throw unauthorized(webhookMessages.signatureInvalid);
  }

  /**
   * Runs a provider event once: the receipt row is the claim (unique on provider and event id), a
   * redelivery answers 200 at once, and a failure inside forgets the claim so the retry runs.
   */
  async function once(provider: string, event: ProviderEvent, handle: () => Promise<Outcome>): Promise<WebhookAck> {
    const id = randomUUID();
    const claimed = await repo.claimReceipt({ id, provider, external_id: externalKey('', event.id), type: event.type, account_id: null, payload: event.payload, outcome: 'processing' });
    if (!claimed) {
      log.info({ provider, event_id: event.id, type: event.type }, 'webhook redelivery ignored');
      return ACK;
    }
    try {
      const { outcome, accountId } = await handle();
      await repo.settleReceipt(id, outcome, accountId ?? null);
      log.info({ provider, event_id: event.id, type: event.type, outcome }, 'webhook processed');
      return ACK;
    } catch (error) {
      await repo.releaseReceipt(id).catch((e: unknown) => log.warn({ err: e }, 'webhook receipt release failed'));
      throw error;
    }
  }

  // ---------------------------------------------------------------- billing (payment_provider)

  /** The billing row a subscription event is about: by subscription id, then customer id. */
  async function billingOf(object: Json, subscriptionId: string | null): Promise<BillingRow | null> {
    const customer = text(object.customer);
    return (subscriptionId ? await repo.billingBySubscription(subscriptionId) : undefined) ?? (customer ? await repo.billingByCustomer(customer) : undefined) ?? null;
  }

  async function knownAccount(value: unknown): Promise<string | null> {
    const id = uuid(value);
    return id && (await repo.accountExists(id)) ? id : null;
  }

  /** Moves the account to the plan and saves its billing row in one transaction, then drops the feature caches. */
  async function changePlan(accountId: string, planId: string, billing: Omit<BillingRow, 'account_id' | 'plan_id'>, source: Json, create?: { userId: string; name: string }): Promise<string> {
    const target = await knex.transaction(async (trx) => {
      const id = create ? await deps.accounts.createAccountFor(trx, create.userId, create.name) : accountId;
      await deps.plans.applyBillingPlan(trx, id, planId, source);
      await repo.saveBilling(trx, { account_id: id, plan_id: planId, ...billing });
      return id;
    });
    await deps.features.invalidate({ accountId: target });
    return target;
  }

  const periodEnd = (object: Json): Date | null => {
    const items = objectAt(object, 'items').data;
    const first = Array.isArray(items) && isObject(items[0]) ? items[0] : {};
    const seconds = typeof object.current_period_end === 'number' ? object.current_period_end : typeof first.current_period_end === 'number' ? first.current_period_end : null;
    return seconds !== null && Number.isFinite(seconds) && seconds > 0 && seconds < 1e11 ? new Date(seconds * 1000) : null;
  };
  const priceOf = (object: Json): string | null => {
    const items = objectAt(object, 'items').data;
    const first = Array.isArray(items) && isObject(items[0]) ? items[0] : {};
    return text(objectAt(first, 'price').id) ?? text(objectAt(object, 'plan').id);
  };

  async function checkoutCompleted(event: ProviderEvent): Promise<Outcome> {
    const o = event.object;
    const meta = objectAt(o, 'metadata');
    const plan = await deps.plans.billingPlan({ planId: text(meta.plan_id), slug: text(meta.plan), priceId: text(meta.price_id) });
    if (!plan) return { outcome: 'ignored_unknown_plan' };
    const billing = { customer_id: text(o.customer), subscription_id: text(o.subscription), status: 'active', current_period_end: null };
    const source = { source: 'payment_provider', event_id: event.id, event_type: event.type };
    const referenced = text(o.client_reference_id) ?? text(meta.account_id);
    if (referenced) {
      const accountId = await knownAccount(referenced);
      if (!accountId) return { outcome: 'no_account' };
      return { outcome: 'plan_changed', accountId: await changePlan(accountId, plan.id, billing, source) };
    }
    // No account named: the buyer gets a new one on the plan (a new user's first account is that one).
    const details = objectAt(o, 'customer_details');
    const userId = uuid(meta.user_id);
    const email = text(details.email) ?? text(o.customer_email);
    const name = text(meta.account_name) ?? `${text(details.name) ?? email ?? 'New'}'s account`;
    if (userId) {
      try {
        return { outcome: 'account_created', accountId: await changePlan('', plan.id, billing, source, { userId, name }) };
      } catch (error) {
        // A user id that names nobody (the owner foreign key refuses it).
        if ((error as { code?: string }).code === '23503') return { outcome: 'no_account' };
        throw error;
      }
    }
    if (!email || email.length > 320 || !email.includes('@')) return { outcome: 'no_account' };
    const found = await deps.accounts.findOrCreateUser(email, text(details.name) ?? email);
    if (found.created && found.accountId) return { outcome: 'account_created', accountId: await changePlan(found.accountId, plan.id, billing, source) };
    return { outcome: 'account_created', accountId: await changePlan('', plan.id, billing, source, { userId: found.user.id, name }) };
  }

  async function subscriptionUpdated(event: ProviderEvent): Promise<Outcome> {
    const o = event.object;
    const meta = objectAt(o, 'metadata');
    const subscriptionId = text(o.id);
    const row = await billingOf(o, subscriptionId);
    const accountId = row?.account_id ?? (await knownAccount(meta.account_id));
    if (!accountId) return { outcome: 'no_account' };
    const plan = await deps.plans.billingPlan({ planId: text(meta.plan_id), slug: text(meta.plan), priceId: priceOf(o) });
    const billing = {
      customer_id: text(o.customer) ?? row?.customer_id ?? null,
      subscription_id: subscriptionId ?? row?.subscription_id ?? null,
      status: (text(o.status) ?? 'active').slice(0, 40),
      current_period_end: periodEnd(o) ?? row?.current_period_end ?? null,
    };
    if (!plan) {
      // The period still moves; the plan stays as it is.
      await knex.transaction((trx) => repo.saveBilling(trx, { account_id: accountId, plan_id: row?.plan_id ?? null, ...billing }));
      return { outcome: 'period_updated', accountId };
    }
    await changePlan(accountId, plan.id, billing, { source: 'payment_provider', event_id: event.id, event_type: event.type });
    return { outcome: 'plan_changed', accountId };
  }

  async function subscriptionDeleted(event: ProviderEvent): Promise<Outcome> {
    const o = event.object;
    const subscriptionId = text(o.id);
    const row = await billingOf(o, subscriptionId);
    const accountId = row?.account_id ?? (await knownAccount(objectAt(o, 'metadata').account_id));
    if (!accountId) return { outcome: 'no_account' };
    const free = await deps.plans.freePlan();
    if (!free) return { outcome: 'no_free_plan', accountId };
    const billing = { customer_id: text(o.customer) ?? row?.customer_id ?? null, subscription_id: subscriptionId ?? row?.subscription_id ?? null, status: 'canceled', current_period_end: periodEnd(o) ?? row?.current_period_end ?? null };
    await changePlan(accountId, free.id, billing, { source: 'payment_provider', event_id: event.id, event_type: event.type });
    return { outcome: 'downgraded', accountId };
  }

  async function invoicePaymentFailed(event: ProviderEvent): Promise<Outcome> {
    const o = event.object;
    const row = await billingOf(o, text(o.subscription));
    log.warn({ event_id: event.id, account_id: row?.account_id ?? null, customer: text(o.customer), subscription: text(o.subscription), attempt_count: o.attempt_count ?? null }, 'payment provider: invoice payment failed');
    return { outcome: 'logged', accountId: row?.account_id ?? null };
  }

  return {
    /** WebSub verification: the hub's challenge, echoed. */
    challenge(query: { 'hub.challenge'?: string }): string {
      return query['hub.challenge'] ?? '';
    },

    async platformB(inbound: InboundRequest): Promise<WebhookAck> {
      const secret = hooks.platform_b_secret;
      if (secret) {
        const sha256Header = inbound.header('x-hub-signature-256');
        const sha1Header = inbound.header('x-hub-signature');
        if (sha256Header) {
          if (!hubSignatureValid(sha256Header, 'sha256', secret, inbound.body)) throw unauthorized(webhookMessages.signatureInvalid);
        } else if (sha1Header) {
          if (!hubSignatureValid(sha1Header, 'sha1', secret, inbound.body)) throw unauthorized(webhookMessages.signatureInvalid);
        } else {
          throw unauthorized(webhookMessages.signatureMissing);
        }
      } else if (hooks.require_signatures) {
        throw unauthorized(webhookMessages.secretNotConfigured);
      }
      const read = deps.platforms.readWebSub(inbound.body.toString('utf8'));
      if (!read.ok) throw new AppError('BAD_REQUEST', read.reason === 'malformed' ? webhookMessages.malformedXml : webhookMessages.missingChannelId);
      for (const entry of read.entries) {
        const problem = inputProblem(entry.raw);
        if (problem) throw inputProblemError(problem, 'body');
      }
      for (const { raw, input } of read.entries) {
        if (!input) continue;
        for (const accountId of await repo.accountsByChannel('platform_b', raw.channel_id!)) await deps.platforms.deliver(accountId, input);
      }
      return ACK;
    },

    async platformC(inbound: InboundRequest): Promise<WebhookAck> {
      const messageId = inbound.header('platform-c-event-message-id') ?? null;
      if (hooks.platform_c_public_key) {
        if (!platformCKey) throw unauthorized(webhookMessages.signatureInvalid);
        const signature = inbound.header('platform-c-event-signature');
        const timestamp = inbound.header('platform-c-event-message-timestamp');
        if (!signature || !timestamp || !messageId) throw unauthorized(webhookMessages.signatureMissing);
        const seconds = parseTimestamp(timestamp);
        if (seconds === null || !withinTolerance(seconds, now())) throw unauthorized(webhookMessages.timestampOutsideTolerance);
        const signed = Buffer.concat([Buffer.from(`${messageId}.${timestamp}.`, 'utf8'), inbound.body]);
        if (!rsaSignatureValid(platformCKey, signed, signature)) throw unauthorized(webhookMessages.signatureInvalid);
      } else if (hooks.platform_c_secret) {
        const signature = inbound.header('platform-c-signature');
        if (!signature) throw unauthorized(webhookMessages.signatureMissing);
        if (!safeEqual(signature.trim().toLowerCase(), hmac('sha256', hooks.platform_c_secret, inbound.body, 'hex'))) throw unauthorized(webhookMessages.signatureInvalid);
      } else if (hooks.require_signatures) {
        throw AppError.forbidden(webhookMessages.secretNotConfigured);
      }
      const type = inbound.header('platform-c-event-type') ?? '';
      if (!deps.platforms.platformC.handles(type)) return ACK;
      const payload = parseObject(inbound.body);
      const read = deps.platforms.platformC.read(type, payload, messageId ?? `body:${sha256(inbound.body)}`);
      if (!read) return ACK;
      for (const accountId of await repo.accountsByChannel('platform_c', read.channelId)) await deps.platforms.deliver(accountId, read.input);
      return ACK;
    },

    /** tips_platform and discord: `X-Signature-256: sha256=<hex>` over the raw body, then the platforms module reads the body. */
    async signedPlatform(platform: SignedPlatform, inbound: InboundRequest): Promise<WebhookAck> {
      const secret = platform === 'tips_platform' ? hooks.tips_platform_secret : hooks.discord_secret;
      if (secret) {
        const signature = inbound.header('x-signature-256');
        if (!signature) throw unauthorized(webhookMessages.signatureMissing);
        if (!hubSignatureValid(signature, 'sha256', secret, inbound.body)) throw unauthorized(webhookMessages.signatureInvalid);
      } else if (hooks.require_signatures) {
        throw unauthorized(webhookMessages.secretNotConfigured);
      }
      const read = deps.platforms.signed(platform, parseObject(inbound.body));
      if (!read) return ACK;
      for (const accountId of await repo.accountsByChannel(platform, read.connectionId)) await deps.platforms.deliver(accountId, read.input);
      return ACK;
    },

    async shopPlatform(inbound: InboundRequest): Promise<WebhookAck> {
      const domain = normaliseShopDomain(inbound.header('x-shop-platform-shop-domain') ?? '');
      const shop = domain ? await repo.shop(domain) : undefined;
      const secret = shop?.secret ?? (domain ? shopSecrets.get(domain) : undefined) ?? null;
      if (secret) {
        const signature = inbound.header('x-shop-platform-hmac-sha256');
        if (!signature) throw unauthorized(webhookMessages.signatureMissing);
        if (!safeEqual(signature.trim(), hmac('sha256', secret, inbound.body, 'base64'))) throw unauthorized(webhookMessages.signatureInvalid);
      } else if (hooks.require_signatures) {
        throw unauthorized(webhookMessages.secretNotConfigured);
      }
      const topic = inbound.header('x-shop-platform-topic') ?? '';
      const type = Object.hasOwn(SHOP_TOPICS, topic) ? SHOP_TOPICS[topic]! : null;
      if (!type) return ACK;
      const payload = parseObject(inbound.body);
      if (!shop) return ACK;
      const webhookId = inbound.header('x-shop-platform-webhook-id');
      const externalId = webhookId ? externalKey('shop_platform:', webhookId) : externalKey(`shop_platform:${topic}:`, text(payload.id) ?? `sha256:${sha256(inbound.body)}`);
      await deps.events.emitFor(shop.accountId, { type, platform: 'shop_platform', raw: payload, externalId });
      return ACK;
    },

    async paymentProvider(inbound: InboundRequest): Promise<WebhookAck> {
      verifyPaymentSignature(inbound, payments.webhook_secret);
      const event = providerEvent(inbound.body);
      return once('payment_provider', event, async () => {
        switch (event.type) {
          case 'checkout.session.completed':
            return checkoutCompleted(event);
          case 'customer.subscription.updated':
            return subscriptionUpdated(event);
          case 'customer.subscription.deleted':
            return subscriptionDeleted(event);
          case 'invoice.payment_failed':
            return invoicePaymentFailed(event);
          default:
            return { outcome: 'ignored' };
        }
      });
    },

    async paymentConnect(inbound: InboundRequest): Promise<WebhookAck> {
      verifyPaymentSignature(inbound, payments.connect_secret);
      const event = providerEvent(inbound.body);
      return once('payment-connect', event, async () => {
        const o = event.object;
        const meta = objectAt(o, 'metadata');
        if (event.type === 'checkout.session.completed') {
          const extensionId = uuid(meta.extension_id);
          if (!extensionId) return { outcome: 'recorded' };
          const accountId = await knownAccount(text(meta.account_id) ?? text(o.client_reference_id));
          const amount = typeof o.amount_total === 'number' && Number.isSafeInteger(o.amount_total) && o.amount_total >= 0 ? o.amount_total : 0;
          await deps.extensions.recordPurchase({
            externalId: text(o.payment_intent) ?? event.id,
            extensionId,
            accountId,
            buyerUserId: uuid(meta.user_id),
            amountCents: amount,
            currency: (text(o.currency) ?? 'usd').slice(0, 10).toUpperCase(),
          });
          return { outcome: 'purchase_recorded', accountId };
        }
        if (event.type === 'charge.refunded') {
          await deps.extensions.refundPurchase(text(o.payment_intent) ?? text(o.id) ?? event.id);
          return { outcome: 'refund_recorded' };
        }
        if (CONNECT_STATE.has(event.type)) return deps.payouts.connectEvent({ id: event.id, type: event.type, object: o });
        return { outcome: 'ignored' };
      });
    },

    async payoutProvider(inbound: InboundRequest): Promise<WebhookAck> {
      const webhookId = payments.payout_webhook_id;
      if (!webhookId) {
        if (!payments.allow_unsigned_webhooks) throw unauthorized(webhookMessages.verificationNotConfigured);
      } else {
        const h = (name: string) => inbound.header(`payout-provider-${name}`);
        const [transmissionId, transmissionTime, transmissionSig, certUrl, authAlgo] = [h('transmission-id'), h('transmission-time'), h('transmission-sig'), h('cert-url'), h('auth-algo')];
        if (!transmissionId || !transmissionTime || !transmissionSig || !certUrl || !authAlgo) throw unauthorized(webhookMessages.signatureMissing);
        if (!certUrlAllowed(certUrl, certDomain)) throw unauthorized(webhookMessages.certificateUrlRejected);
        // One JSON object, checked before it is spliced into the verification request.
        parseObject(inbound.body);
        const verified = await deps.payout.verify({ authAlgo, certUrl, transmissionId, transmissionSig, transmissionTime, webhookId, rawEvent: inbound.body.toString('utf8') });
        if (!verified) throw unauthorized(webhookMessages.signatureInvalid);
      }
      const event = providerEvent(inbound.body);
      return once('payout-provider', event, () => deps.payouts.payoutEvent({ id: event.id, type: event.type, object: event.object }));
    },

    // ---------------------------------------------------------------- operator path: shops

    async recordShop(ctx: AuthContext, accountId: string, rawDomain: string, input: { secret?: string | null }): Promise<ShopConnection> {
      const domain = normaliseShopDomain(rawDomain);
      if (!domain) throw AppError.validation(webhookMessages.invalidShopDomain, { fields: [{ field: 'shop_domain', message: webhookMessages.invalidShopDomain }] });
      if (!(await repo.accountExists(accountId))) throw AppError.notFound(webhookMessages.accountNotFound);
      try {
        await knex.transaction(async (trx) => {
          const existing = await repo.shop(domain, trx);
          if (existing && existing.accountId !== accountId) throw new AppError('CONFLICT', webhookMessages.shopTaken);
          if (!existing) await repo.insertShop(trx, { shop_domain: domain, account_id: accountId, secret: input.secret ?? null });
          else if (input.secret !== undefined) await repo.updateShopSecret(trx, domain, input.secret);
          else await repo.touchShop(trx, domain);
          const hasSecret = existing && input.secret === undefined ? Boolean(existing.secret) : Boolean(input.secret);
          await deps.audit.record({ scope: 'system', type: 'system:shop_connection_recorded', accountId, userId: ctx.userId, actorId: ctx.userId, metadata: { shop_domain: domain, has_secret: hasSecret } }, trx);
        });
      } catch (error) {
        // Two operators recording one new domain at once: the loser sees the winner's row.
        if ((error as { code?: string }).code === '23505') throw new AppError('CONFLICT', webhookMessages.shopTaken);
        throw error;
      }
      return (await repo.shopConnection(domain))!;
    },

    async removeShop(ctx: AuthContext, accountId: string, rawDomain: string): Promise<void> {
      const domain = normaliseShopDomain(rawDomain);
      if (!(await repo.accountExists(accountId))) throw AppError.notFound(webhookMessages.accountNotFound);
      if (!domain) return;
      await knex.transaction(async (trx) => {
        if (await repo.removeShop(trx, accountId, domain)) {
          await deps.audit.record({ scope: 'system', type: 'system:shop_connection_removed', accountId, userId: ctx.userId, actorId: ctx.userId, metadata: { shop_domain: domain } }, trx);
        }
      });
    },

    /** The receipt log of one provider, newest first (operators and tests). */
    receipts: (provider: string) => repo.receipts(provider),
    /** The billing state of an account, or null. */
    billing: async (accountId: string) => (await repo.billing(accountId)) ?? null,
  };
}

export type WebhooksService = ReturnType<typeof createWebhooksService>;
