/** GraphQL bindings of setting presets. */
import type { MutationResolvers, QueryResolvers } from '../../../generated/graphql';
import type { GraphQLContext } from '../../http/graphql/context';
import type { PresetsService } from './service';

export function createPresetsResolvers(service: PresetsService): {
  Query: Pick<QueryResolvers<GraphQLContext>, 'mySettingPresets' | 'adminUserSettingPresets'>;
  Mutation: Pick<MutationResolvers<GraphQLContext>, 'createSettingPreset' | 'updateSettingPreset' | 'deleteSettingPreset' | 'adminDeleteUserSettingPreset'>;
} {
  return {
    Query: {
      mySettingPresets: (_p, _a, context) => service.mine(context.auth),
      adminUserSettingPresets: (_p, { id }) => service.ofUserForAdmin(id),
    },
    Mutation: {
      createSettingPreset: (_p, { input }, context) => service.create(context.auth, input),
      updateSettingPreset: (_p, { id, input }, context) => service.update(context.auth, id, input),
      deleteSettingPreset: async (_p, { id }, context) => {
        await service.remove(context.auth, id);
        return true;
      },
      adminDeleteUserSettingPreset: async (_p, { id }, context) => {
        await service.adminDelete(context.auth, id);
        return true;
      },
    },
  };
}
