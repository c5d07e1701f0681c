/** REST bindings of sessions and popout sessions: name mapping only. */
import type { RestHandlers } from '../../../generated/rest';
import type { RequestContext } from '../../http/context';
import { SUCCESS, wholeCollection } from '../../http/envelope';
import { POPOUT_COOKIE } from '../../http/middleware';
import type { SessionInfo, SessionTokens, SessionsService } from './service';

export const tokensBody = (t: SessionTokens) => ({
  data: {
    access_token: t.accessToken,
    refresh_token: t.refreshToken,
    expires_at: t.expiresAt,
    session_id: t.sessionId,
    user_id: t.userId,
    account_id: t.accountId,
  },
});

const session = (s: SessionInfo) => ({
  id: s.id,
  created_at: s.createdAt,
  last_used_at: s.lastUsedAt,
  expires_at: s.expiresAt,
  ip_address: s.ipAddress,
  user_agent: s.userAgent,
  current: s.current,
});

type Handlers = Pick<
  RestHandlers<RequestContext>,
  | 'devLogin'
  | 'refreshSession'
  | 'switchAccount'
  | 'sessions'
  | 'revokeSession'
  | 'issueWsToken'
  | 'exchangePopoutToken'
  | 'getPopoutSession'
  | 'issuePopoutWsToken'
>;

export function createSessionsRest(service: SessionsService): Handlers {
  return {
    async devLogin({ body }, context) {
      return { status: 200, body: tokensBody(await service.devLogin({ email: body.email, displayName: body.display_name }, context.client)) };
    },
    async refreshSession({ body }) {
      return { status: 200, body: tokensBody(await service.refresh(body.refresh_token)) };
    },
    async switchAccount({ body }, context) {
      return { status: 200, body: tokensBody(await service.switchAccount(context.auth, body.account_id)) };
    },
    async sessions(_request, context) {
      return { status: 200, body: wholeCollection((await service.list(context.auth)).map(session), context.selfUrl) };
    },
    async revokeSession({ params }, context) {
      await service.revoke(context.auth, params.id, context.client);
      return { status: 200, body: SUCCESS };
    },
    async issueWsToken(_request, context) {
      const t = await service.issueWsToken(context.auth);
      return { status: 200, body: { data: { ws_token: t.wsToken, expires_at: t.expiresAt } } };
    },
    async exchangePopoutToken({ body }, context) {
      const s = await service.exchangePopout(body.token);
      context.setCookie(POPOUT_COOKIE, s.token, service.popoutCookieOptions());
      return { status: 200, body: { data: { token: s.token, expires_at: s.expiresAt, account_id: s.accountId } } };
    },
    async getPopoutSession(_request, context) {
      const s = service.popoutSession(context.auth);
      return { status: 200, body: { data: { account_id: s.accountId, user_id: s.userId } } };
    },
    async issuePopoutWsToken(_request, context) {
      const t = await service.issuePopoutWsToken(context.auth);
      return { status: 200, body: { data: { ws_token: t.wsToken, expires_at: t.expiresAt } } };
    },
  };
}
