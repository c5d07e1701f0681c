/** GraphQL bindings of chat: the domain shape is camelCase already; paging uses the REST twin's declared bounds. */
import type { MutationResolvers, QueryResolvers } from '../../../generated/graphql';
import type { GraphQLContext } from '../../http/graphql/context';
import { pageFor } from '../../http/paging';
import type { ChatService } from './service';

export function createChatResolvers(service: ChatService): {
  Query: Pick<QueryResolvers<GraphQLContext>, 'chatHistory' | 'searchPlatformUsers'>;
  Mutation: Pick<MutationResolvers<GraphQLContext>, 'sendChatToPlatform' | 'moderateChat' | 'refreshPlatformUserProfile'>;
} {
  return {
    Query: {
      chatHistory: (_p, { filter }, context) => service.history(context.auth, filter ?? {}, pageFor('chatHistory', filter)),
      searchPlatformUsers: (_p, args, context) => service.searchUsers(context.auth, args),
    },
    Mutation: {
      // Absent members of a result are null on GraphQL.
      sendChatToPlatform: async (_p, { input }, context) => {
        const result = await service.send(context.auth, input);
        return { ...result, messageId: result.messageId ?? null, errorCode: result.errorCode ?? null, error: result.error ?? null };
      },
      moderateChat: async (_p, { input }, context) => {
        const result = await service.moderate(context.auth, input);
        return { ...result, details: result.details ?? null };
      },
      refreshPlatformUserProfile: (_p, { platform, platformUserId }, context) => service.refreshProfile(context.auth, platform, platformUserId),
    },
  };
}
