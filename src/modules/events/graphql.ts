/** GraphQL bindings of the events surface: the domain shape is already camelCase; paging uses the REST twin's declared bounds. */
import type { MutationResolvers, QueryResolvers } from '../../../generated/graphql';
import type { GraphQLContext } from '../../http/graphql/context';
import { pageFor } from '../../http/paging';
import type { EventsService } from './service';

export function createEventsResolvers(service: EventsService): {
  Query: Pick<QueryResolvers<GraphQLContext>, 'events' | 'event'>;
  Mutation: Pick<MutationResolvers<GraphQLContext>, 'emitEvent' | 'emitBotEvent'>;
} {
  return {
    Query: {
      events: (_p, { filter }, context) => service.list(context.auth, filter ?? {}, pageFor('events', filter), context.untilAnswered),
      event: (_p, { id }, context) => service.get(context.auth, id),
    },
    Mutation: {
      emitEvent: (_p, { input }, context) => service.emit(context.auth, input),
      emitBotEvent: (_p, args) => service.emitBot(args),
    },
  };
}
