/** GraphQL bindings of overlays and widget instances (their tokens and access entries are REST only). */
import type { MutationResolvers, QueryResolvers } from '../../../generated/graphql';
import type { GraphQLContext } from '../../http/graphql/context';
import type { OverlaysService } from './service';

export function createOverlaysResolvers(service: OverlaysService): {
  Query: Pick<QueryResolvers<GraphQLContext>, 'overlays' | 'overlay' | 'widgets' | 'widget'>;
  Mutation: Pick<MutationResolvers<GraphQLContext>, 'createOverlay' | 'updateOverlay' | 'createWidget' | 'updateWidget'>;
} {
  return {
    Query: {
      overlays: (_p, _a, context) => service.list(context.auth, 'overlays'),
      overlay: (_p, { id }, context) => service.get(context.auth, 'overlays', id),
      widgets: (_p, _a, context) => service.list(context.auth, 'widgets'),
      widget: (_p, { id }, context) => service.get(context.auth, 'widgets', id),
    },
    Mutation: {
      createOverlay: (_p, { input }, context) => service.create(context.auth, 'overlays', input),
      updateOverlay: (_p, { id, input }, context) => service.update(context.auth, 'overlays', id, input),
      createWidget: (_p, { input }, context) => service.create(context.auth, 'widgets', input),
      updateWidget: (_p, { id, input }, context) => service.update(context.auth, 'widgets', id, input),
    },
  };
}
