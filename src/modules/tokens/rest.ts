/** REST bindings of the tokens module: name mapping only. */
import type { RestHandlers } from '../../../generated/rest';
import type { RequestContext } from '../../http/context';
import { single } from '../../http/envelope';
import type { TokensService } from './service';

export function createTokensRest(service: TokensService): Pick<RestHandlers<RequestContext>, 'myPermissions'> {
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
  };
}
