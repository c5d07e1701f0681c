/**
 * REST bindings of the tokens module, in domain form: the router maps names and applies the
 * envelopes and self links the spec declares (src/http/rest.ts).
 */
import { bindRest } from '../../http/rest';
import { SUCCESS } from '../../http/envelope';
import type { TokensService } from './service';

export function createTokensRest(service: TokensService) {
  return bindRest({
    myPermissions: async (_r, context) => service.myPermissions(context.auth),
    popoutTokens: (_r, context) => service.popoutTokens(context.auth),
    async createPopoutToken({ body }, context) {
      const created = await service.createPopoutToken(context.auth, body);
      return { ...created.popoutToken, token: created.token };
    },
    async revokePopoutToken({ params }, context) {
      await service.revokePopoutToken(context.auth, params.id);
      return SUCCESS;
    },
  });
}
