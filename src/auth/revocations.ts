/**
 * Revocation notices on the bus. A request sees a revoked session or token at once because every
 * request re-reads the row; a WebSocket authenticated once at its upgrade does not, so whoever
 * revokes a credential announces it here and every node's realtime server closes the sockets that
 * stand on it (TOKEN_REVOKED). Owns the bus channel and the notice's wire form; a notice names the
 * credential by its `AuthContext.credentialId` (a session id or a token's SHA-256), never a token.
 */
import type { Bus } from '../infra/bus';
import type { Logger } from '../infra/logger';

/** Internal bus channel; not a socket channel, so no client can subscribe or broadcast to it. */
export const REVOCATIONS_CHANNEL = 'revocations';

export interface RevocationNotice {
  /** The revoked credential's `AuthContext.credentialId`. */
  credential_id: string;
  /** `session`: a login session (revoke, refresh replay); `token`: an opaque token (popout, ...). */
  kind: 'session' | 'token';
}

export interface Revocations {
  /**
   * Announces a revocation that is already stored. Never throws: the revocation itself has
   * happened, so a bus failure is logged rather than turned into a failed request.
   */
  announce(notice: RevocationNotice): Promise<void>;
  /** Listens for every node's notices (this node's included); resolves with the unsubscribe. */
  listen(handler: (notice: RevocationNotice) => void): Promise<() => Promise<void>>;
}

function parseNotice(message: string): RevocationNotice | null {
  try {
    const value = JSON.parse(message) as Partial<RevocationNotice> | null;
    if (typeof value?.credential_id !== 'string' || (value.kind !== 'session' && value.kind !== 'token')) return null;
    return { credential_id: value.credential_id, kind: value.kind };
  } catch {
    return null;
  }
}

export function createRevocations(deps: { bus: Bus; log: Logger }): Revocations {
  return {
    async announce(notice) {
      try {
        await deps.bus.publish(REVOCATIONS_CHANNEL, JSON.stringify(notice));
      } catch (error) {
        deps.log.error({ err: error, kind: notice.kind }, 'could not announce a revocation; open sockets close at their next re-check');
      }
    },
    listen(handler) {
      return deps.bus.subscribe(REVOCATIONS_CHANNEL, (_channel, message) => {
        const notice = parseNotice(message);
        if (notice) handler(notice);
        else deps.log.warn('ignored a malformed revocation notice');
      });
    },
  };
}
