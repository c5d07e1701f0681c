/**
 * REST bindings of sessions and popout sessions, in domain form: the router maps names and
 * applies the envelopes the spec declares (src/http/rest.ts).
 */
import { SUCCESS } from '../../http/envelope';
import { POPOUT_COOKIE } from '../../auth/credentials';
import { bindRest } from '../../http/rest';
import type { SessionsService } from './service';

export function createSessionsRest(service: SessionsService) {
  return bindRest({
    devLogin: ({ body }, context) => service.devLogin(body, context.client),
    refreshSession: ({ body }) => service.refresh(body.refreshToken),
    switchAccount: ({ body }, context) => service.switchAccount(context.auth, body.accountId),
    sessions: (_r, context) => service.list(context.auth),
    async revokeSession({ params }, context) {
      await service.revoke(context.auth, params.id, context.client);
      return SUCCESS;
    },
    issueWsToken: (_r, context) => service.issueWsToken(context.auth),
    async exchangePopoutToken({ body }, context) {
      const s = await service.exchangePopout(body.token);
      context.setCookie(POPOUT_COOKIE, s.token, service.popoutCookieOptions());
      return s;
    },
    getPopoutSession: async (_r, context) => service.popoutSession(context.auth),
    issuePopoutWsToken: (_r, context) => service.issuePopoutWsToken(context.auth),
  });
}
