/** REST bindings of the tokens module: name mapping only. */
import type { RestHandlers } from '../../../generated/rest';
import type { RequestContext } from '../../http/context';
import { SUCCESS, single, wholeCollection } from '../../http/envelope';
import type { PopoutToken, TokensService } from './service';

const popout = (t: PopoutToken) => ({
  id: t.id,
  account_id: t.accountId,
  user_id: t.userId,
  created_by: t.createdBy,
  label: t.label,
  permissions: t.permissions,
  expires_at: t.expiresAt,
  revoked_at: t.revokedAt,
  last_used_at: t.lastUsedAt,
  created_at: t.createdAt,
});

export function createTokensRest(service: TokensService): Pick<RestHandlers<RequestContext>, 'myPermissions' | 'popoutTokens' | 'createPopoutToken' | 'revokePopoutToken'> {
  return {
    async myPermissions(_request, context) {
      const p = service.myPermissions(context.auth);
      return {
        status: 200,
        body: single(
          {
            context: p.context,
            user_id: p.userId,
            account_id: p.accountId,
            permissions: p.permissions,
            admin_permissions: p.adminPermissions,
            user_permissions: p.userPermissions,
          },
          context.selfUrl,
        ),
      };
    },
    async popoutTokens(_request, context) {
      return { status: 200, body: wholeCollection((await service.popoutTokens(context.auth)).map(popout), context.selfUrl) };
    },
    async createPopoutToken({ body }, context) {
      const created = await service.createPopoutToken(context.auth, {
        label: body.label,
        permissions: body.permissions,
        userId: body.user_id,
        expiresAt: body.expires_at,
      });
      return { status: 201, body: single({ ...popout(created.popoutToken), token: created.token }, `/v1/tokens/${created.popoutToken.id}`) };
    },
    async revokePopoutToken({ params }, context) {
      await service.revokePopoutToken(context.auth, params.id);
      return { status: 200, body: SUCCESS };
    },
  };
}
