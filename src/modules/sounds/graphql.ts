/** GraphQL bindings of the sound library (uploadSound takes a file of a multipart request; the audio stream is REST only). */
import type { MutationResolvers, QueryResolvers } from '../../../generated/graphql';
import type { GraphQLContext } from '../../http/graphql/context';
import type { SoundsService } from './service';

export function createSoundsResolvers(service: SoundsService): {
  Query: Pick<QueryResolvers<GraphQLContext>, 'sounds' | 'sound'>;
  Mutation: Pick<MutationResolvers<GraphQLContext>, 'uploadSound' | 'updateSound' | 'deleteSound' | 'playSound' | 'stopSound'>;
} {
  return {
    Query: {
      sounds: (_p, args, context) => service.list(context.auth, args),
      sound: (_p, { id }, context) => service.get(context.auth, id),
    },
    Mutation: {
      uploadSound: (_p, { file, name }, context) => service.uploadFile(context.auth, file, name),
      updateSound: (_p, { id, input }, context) => service.update(context.auth, id, input),
      deleteSound: async (_p, { id }, context) => {
        await service.remove(context.auth, id);
        return true;
      },
      playSound: async (_p, { id, volume, target }, context) => {
        await service.play(context.auth, id, { volume, target });
        return { success: true };
      },
      stopSound: async (_p, { id, target }, context) => {
        await service.stop(context.auth, id, { target });
        return { success: true };
      },
    },
  };
}
