/**
 * The payout provider's signature verification behind an adapter: the receiver forwards the
 * transmission headers, the configured webhook id and the raw event to the provider's API and
 * accepts only its `SUCCESS` verdict. Tests point `payments.payout_api_url` at a local fake.
 */
export interface PayoutVerificationRequest {
  authAlgo: string;
  certUrl: string;
  transmissionId: string;
  transmissionSig: string;
  transmissionTime: string;
  webhookId: string;
  /** The delivery's raw body (already checked to be one JSON value). */
  rawEvent: string;
}

export interface PayoutVerifier {
  /** True only on the provider's `SUCCESS`; false on any other verdict or failure (fail closed). */
  verify(request: PayoutVerificationRequest): Promise<boolean>;
}

const VERIFY_PATH = '/v1/notifications/verify-webhook-signature';

export function createHttpPayoutVerifier(options: { apiUrl: string; timeoutMs?: number; log?: { warn(obj: object, msg: string): void } }): PayoutVerifier {
  const url = `${options.apiUrl.replace(/\/+$/, '')}${VERIFY_PATH}`;
  return {
    async verify(request) {
      const head = JSON.stringify({
        auth_algo: request.authAlgo,
        cert_url: request.certUrl,
        transmission_id: request.transmissionId,
        transmission_sig: request.transmissionSig,
        transmission_time: request.transmissionTime,
        webhook_id: request.webhookId,
      });
      // The event travels byte for byte (re-serialising it would change what was signed).
      const body = `${head.slice(0, -1)},"webhook_event":${request.rawEvent}}`;
      try {
        const res = await fetch(url, {
          method: 'POST',
          headers: { 'content-type': 'application/json', accept: 'application/json' },
          body,
          signal: AbortSignal.timeout(options.timeoutMs ?? 5000),
        });
        if (!res.ok) {
          options.log?.warn({ status: res.status }, 'payout webhook verification refused');
          return false;
        }
        const verdict = (await res.json()) as { verification_status?: unknown };
        return verdict?.verification_status === 'SUCCESS';
      } catch (error) {
        options.log?.warn({ err: error }, 'payout webhook verification failed');
        return false;
      }
    },
  };
}

/** The domain a certificate URL must be on: configured, else the API host without its first label. */
export function payoutCertDomain(configured: string | null, apiUrl: string): string {
  if (configured) return configured.toLowerCase().replace(/\.$/, '');
  const host = new URL(apiUrl).hostname.toLowerCase();
  const labels = host.split('.');
  return labels.length > 2 ? labels.slice(1).join('.') : host;
}

/** https on the provider's domain or one of its subdomains. */
export function certUrlAllowed(certUrl: string, domain: string): boolean {
  let parsed: URL;
  try {
    parsed = new URL(certUrl);
  } catch {
    return false;
  }
  if (parsed.protocol !== 'https:' || parsed.username || parsed.password) return false;
  const host = parsed.hostname.toLowerCase().replace(/\.$/, '');
  return host === domain || host.endsWith(`.${domain}`);
}
