/**
 * The retry delay of the outboxes that try a third party again (mail, payout submission):
 * exponential from the try just made, bounded by `max_delay_ms`, with jitter (a random half to
 * whole of it) so that nodes retrying together spread out.
 */
export interface BackoffConfig {
  base_delay_ms: number;
  max_delay_ms: number;
}

export function backoffDelayMs(attempts: number, retry: Readonly<BackoffConfig>, random = Math.random): number {
  const bounded = Math.min(retry.max_delay_ms, retry.base_delay_ms * 2 ** Math.max(0, attempts - 1));
  return Math.round(bounded * (0.5 + random() / 2));
}
