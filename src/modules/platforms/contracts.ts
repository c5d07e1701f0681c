/**
 * The platforms' inbound contracts at run time: spec/platforms/<platform>.json, compiled by
 * codegen into the message table (generated/platforms.ts) and one standalone validator per
 * message (generated/platform-validators.js). `recognise` picks the message a frame is (its
 * `x-match` members), validates it against that message's payload and answers the message's
 * ingest rule; a frame no message matches is `unknown`, one failing its payload `malformed`.
 * Both are counted per platform and reason (the metric `svc_platform_frames_rejected_total`) and
 * logged once per platform, reason and frame kind, never thrown.
 */
import { platformMessages, type PlatformIngest, type PlatformMessageSpec } from '../../../generated/platforms';
import * as validators from '../../../generated/platform-validators';
import type { Logger } from '../../infra/logger';

export type { PlatformIngest } from '../../../generated/platforms';

export type Recognised = { ok: true; message: PlatformMessageSpec; ingest: PlatformIngest } | { ok: false; reason: 'unknown' | 'malformed' };

/** At most this many distinct kinds are remembered as logged (a hostile platform cannot grow the set). */
const LOGGED_CAP = 1000;

export interface Contracts {
  /**
   * The message `frame` is, by the members `keys` names (a frame's own `type`/`event`, or a
   * receiver's header), validated; a rejection is counted and logged once.
   */
  recognise(platform: string, keys: Readonly<Record<string, unknown>>, frame: unknown): Recognised;
  /** Counts and logs once a frame rejected before matching (not JSON, not an object). */
  reject(platform: string, reason: 'unknown' | 'malformed', kind: string, detail?: string): void;
  /** Rejected frames by `platform:reason` since start (the metric's totals). */
  rejected(): Record<string, number>;
}

export function createContracts(log: Logger): Contracts {
  const totals = new Map<string, number>();
  const logged = new Set<string>();

  function reject(platform: string, reason: 'unknown' | 'malformed', kind: string, detail?: string): void {
    const key = `${platform}:${reason}`;
    totals.set(key, (totals.get(key) ?? 0) + 1);
    const once = `${key}:${kind.slice(0, 100)}`;
    if (logged.has(once) || logged.size >= LOGGED_CAP) return;
    logged.add(once);
    log.warn({ platform, reason, kind: kind.slice(0, 100), ...(detail ? { detail: detail.slice(0, 300) } : {}) }, 'platform frame rejected (logged once per kind)');
  }

  return {
    recognise(platform, keys, frame) {
      const messages = platformMessages[platform] ?? [];
      const message = messages.find((m) => Object.entries(m.match).every(([k, v]) => keys[k] === v));
      const kind = Object.values(keys)
        .filter((v) => typeof v === 'string' || typeof v === 'boolean')
        .map(String)
        .join('/');
      if (!message) {
        reject(platform, 'unknown', kind || '(none)');
        return { ok: false, reason: 'unknown' };
      }
      const validate = validators[message.validator];
      if (!validate(frame)) {
        const first = validate.errors?.[0];
        reject(platform, 'malformed', message.name, first ? `${first.instancePath || '/'} ${first.message ?? ''}` : undefined);
        return { ok: false, reason: 'malformed' };
      }
      return { ok: true, message, ingest: message.ingest };
    },
    reject,
    rejected: () => Object.fromEntries(totals),
  };
}
