/** GraphQL bindings of overlays and widget instances (their tokens and access entries are REST only). */
import type { MutationResolvers, QueryResolvers } from '../../../generated/graphql';
import type { GraphQLContext } from '../../http/graphql/context';
import type { OverlaysService, WidgetResource as Widget } from './service';

export function createOverlaysResolvers(service: OverlaysService): {
  Query: Pick<QueryResolvers<GraphQLContext>, 'overlays' | 'overlay' | 'widgets' | 'widget'>;
  Mutation: Pick<MutationResolvers<GraphQLContext>, 'createOverlay' | 'updateOverlay' | 'createWidget' | 'updateWidget'>;
} {
  return {
    Query: {
      overlays: (_p, _a, context) => service.list(context.auth, 'overlays'),
      overlay: (_p, { id }, context) => service.get(context.auth, 'overlays', id),
      widgets: async (_p, _a, context) => (await service.list(context.auth, 'widgets')) as Widget[],
      widget: async (_p, { id }, context) => (await service.get(context.auth, 'widgets', id)) as Widget,
    },
    Mutation: {
      createOverlay: (_p, { input }, context) => service.create(context.auth, 'overlays', input),
      updateOverlay: (_p, { id, input }, context) => service.update(context.auth, 'overlays', id, input),
      createWidget: async (_p, { input }, context) => (await service.create(context.auth, 'widgets', input)) as Widget,
      updateWidget: async (_p, { id, input }, context) => (await service.update(context.auth, 'widgets', id, input)) as Widget,
    },
  };
}
