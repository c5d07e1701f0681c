/** GraphQL bindings of sessions and popout sessions: the domain shape is already camelCase. */
import type { MutationResolvers, QueryResolvers } from '../../../generated/graphql';
import type { GraphQLContext } from '../../http/graphql/context';
import { POPOUT_COOKIE } from '../../auth/credentials';
import type { SessionsService } from './service';

export function createSessionsResolvers(service: SessionsService): {
  Query: Pick<QueryResolvers<GraphQLContext>, 'sessions'>;
  Mutation: Pick<MutationResolvers<GraphQLContext>, 'switchAccount' | 'revokeSession' | 'issueWsToken' | 'issuePopoutWsToken' | 'exchangePopoutToken'>;
} {
  return {
    Query: {
      sessions: (_p, _a, context) => service.list(context.auth),
    },
    Mutation: {
      switchAccount: (_p, { accountId }, context) => service.switchAccount(context.auth, accountId),
      revokeSession: async (_p, { id }, context) => {
        await service.revoke(context.auth, id, context.client);
        return true;
      },
      issueWsToken: (_p, _a, context) => service.issueWsToken(context.auth),
      issuePopoutWsToken: (_p, _a, context) => service.issuePopoutWsToken(context.auth),
      exchangePopoutToken: async (_p, { token }, context) => {
        const session = await service.exchangePopout(token);
        context.setCookie(POPOUT_COOKIE, session.token, service.popoutCookieOptions());
        return session;
      },
    },
  };
}
