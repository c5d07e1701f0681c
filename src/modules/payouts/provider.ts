/**
 * The payout provider behind an adapter: creating a payout at the provider, one sender batch of
 * one item per payout request. The real implementation talks to the provider's HTTP API at
 * `payments.payout_api_url` (the same API the webhooks module asks to verify deliveries): an
 * OAuth2 client-credentials token from `/v1/oauth2/token` (`payouts.client_id` and
 * `payouts.client_secret`), then `POST /v1/payments/payouts`. Tests run a local fake of that API;
 * nothing else of the payout flow is swapped.
 *
 * Paying twice is what must never happen, so every submission carries the payout's id three
 * times: as the `Payout-Provider-Request-Id` header (the provider answers a repeated request with
 * the first one's result instead of acting again) and as the sender batch and sender item id (the
 * provider refuses a second batch under a sender batch id it has seen, and its webhook events
 * name our id back). A try whose answer was lost (timeout, 5xx, a dead node) is therefore safe to
 * repeat.
 */

/** What one payout request asks the provider to pay. */
export interface PayoutSubmission {
  /** The payout's id: idempotency key, sender batch id and sender item id. */
  payoutId: string;
  amountCents: number;
  /** ISO 4217, upper case. */
  currency: string;
  /** The payee's payout e-mail (the provider's receiver). */
  receiver: string;
}

/**
 * The provider's answer: `accepted` (it holds the payout; its batch id when it said one),
 * `refused` (it will never pay this request as it stands: the reason is shown to the developer),
 * or `unavailable` (no answer, or an answer that may change: try again later).
 */
export type SubmissionResult =
  | { kind: 'accepted'; batchId: string | null; itemId: string | null }
  | { kind: 'refused'; reason: string }
  | { kind: 'unavailable'; reason: string };

export interface PayoutProvider {
  /** Never throws: every failure is one of the results. */
  submit(submission: PayoutSubmission): Promise<SubmissionResult>;
}

export interface HttpPayoutProviderOptions {
  apiUrl: string;
  clientId: string;
  clientSecret: string;
  timeoutMs: number;
  log?: { warn(obj: object, msg: string): void };
}

type Json = Record<string, unknown>;
const isObject = (value: unknown): value is Json => typeof value === 'object' && value !== null && !Array.isArray(value);
const text = (value: unknown, max = 255): string | null => (typeof value === 'string' && value.length > 0 && value.length <= max ? value : null);

/** Minor units to the provider's decimal string: 1234 USD is "12.34", 1234 JPY is "1234". */
export function decimalAmount(amountCents: number, currency: string): string {
  let digits = 2;
  try {
    digits = new Intl.NumberFormat('en', { style: 'currency', currency }).resolvedOptions().maximumFractionDigits ?? 2;
  } catch {
    // An unknown code keeps two decimals; the provider refuses it if it does not know it either.
  }
  if (digits === 0) return String(amountCents);
  const whole = BigInt(amountCents);
  const unit = 10n ** BigInt(digits);
  return `${whole / unit}.${(whole % unit).toString().padStart(digits, '0')}`;
}

/** Answers that may change on a later try: timeouts, conflicts, rate limits and the provider's own faults. */
const RETRYABLE = new Set([401, 403, 408, 409, 423, 425, 429]);

/** The provider's error body, as one line: `NAME: message`. */
function reasonOf(status: number, body: unknown): string {
  const name = isObject(body) ? text(body.name, 100) : null;
  const message = isObject(body) ? text(body.message, 300) : null;
  const detail = isObject(body) && Array.isArray(body.details) && isObject(body.details[0]) ? text(body.details[0].issue, 100) : null;
  const parts = [name, message, detail && detail !== name ? `(${detail})` : null].filter(Boolean);
  return (parts.length ? parts.join(name && message ? ': ' : ' ') : `HTTP ${status}`).replace(/\s+/g, ' ').slice(0, 450);
}

export function createHttpPayoutProvider(options: HttpPayoutProviderOptions): PayoutProvider {
  const base = options.apiUrl.replace(/\/+$/, '');
  let token: { value: string; until: number } | null = null;

  async function call(path: string, init: RequestInit): Promise<{ status: number; body: unknown }> {
    const res = await fetch(`${base}${path}`, { ...init, signal: AbortSignal.timeout(options.timeoutMs) });
    const raw = await res.text();
    let body: unknown = null;
    try {
      body = raw ? JSON.parse(raw) : null;
    } catch {
      body = null;
    }
    return { status: res.status, body };
  }

  /** A cached client-credentials token, renewed a minute before it expires. */
  async function accessToken(): Promise<string | { unavailable: string }> {
    if (token && token.until > Date.now()) return token.value;
    const basic = Buffer.from(`${options.clientId}:${options.clientSecret}`).toString('base64');
    const { status, body } = await call('/v1/oauth2/token', {
      method: 'POST',
      headers: { authorization: `Basic ${basic}`, 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
      body: 'grant_type=client_credentials',
    });
    const value = isObject(body) ? text(body.access_token, 4096) : null;
    if (status !== 200 || !value) return { unavailable: `token request answered ${reasonOf(status, body)}` };
    const seconds = isObject(body) && typeof body.expires_in === 'number' ? body.expires_in : 300;
    token = { value, until: Date.now() + Math.max(0, seconds - 60) * 1000 };
    return value;
  }

  return {
    async submit(submission) {
      try {
        const bearer = await accessToken();
        if (typeof bearer !== 'string') return { kind: 'unavailable', reason: bearer.unavailable };
        const { status, body } = await call('/v1/payments/payouts', {
          method: 'POST',
          headers: {
            authorization: `Bearer ${bearer}`,
            'content-type': 'application/json',
            accept: 'application/json',
            'payout-provider-request-id': submission.payoutId,
          },
          body: JSON.stringify({
            sender_batch_header: { sender_batch_id: submission.payoutId, email_subject: 'You have a payout', recipient_type: 'EMAIL' },
            items: [
              {
                recipient_type: 'EMAIL',
                amount: { value: decimalAmount(submission.amountCents, submission.currency), currency: submission.currency },
                receiver: submission.receiver,
                sender_item_id: submission.payoutId,
              },
            ],
          }),
        });
        if (status === 200 || status === 201) {
          const header = isObject(body) && isObject(body.batch_header) ? body.batch_header : {};
          const items = isObject(body) && Array.isArray(body.items) ? body.items : [];
          const item = items.find((i): i is Json => isObject(i) && isObject(i.payout_item) && i.payout_item.sender_item_id === submission.payoutId);
          return { kind: 'accepted', batchId: text(header.payout_batch_id), itemId: item ? text(item.payout_item_id) : null };
        }
        if (status === 401) token = null;
        // The provider already holds a batch under this id: an earlier try reached it. Its events
        // name our id, so the payout is matched when they come.
        if (isObject(body) && body.name === 'SENDER_BATCH_ID_ALREADY_USED') return { kind: 'accepted', batchId: null, itemId: null };
        const reason = reasonOf(status, body);
        if (status >= 500 || RETRYABLE.has(status)) return { kind: 'unavailable', reason };
        return { kind: 'refused', reason };
      } catch (error) {
        const reason = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
        options.log?.warn({ payout_id: submission.payoutId, err: reason }, 'payout provider unreachable');
        return { kind: 'unavailable', reason: reason.slice(0, 450) };
      }
    },
  };
}
