/** REST bindings of the sound library (domain form; the router maps names and envelopes, and pipes the audio stream). */
import { SUCCESS, reply } from '../../http/envelope';
import { bindRest } from '../../http/rest';
import type { SoundsService } from './service';

export function createSoundsRest(service: SoundsService) {
  return bindRest({
    sounds: ({ query }, context) => service.list(context.auth, query),
    uploadSound: (_r, context) => service.upload(context.auth, context.raw),
    sound: ({ params }, context) => service.get(context.auth, params.id),
    updateSound: ({ params, body }, context) => service.update(context.auth, params.id, body),
    async deleteSound({ params }, context) {
      await service.remove(context.auth, params.id);
      return undefined;
    },
    async playSound({ params, body }, context) {
      await service.play(context.auth, params.id, body ?? {});
      return SUCCESS;
    },
    async stopSound({ params, body }, context) {
      await service.stop(context.auth, params.id, body ?? {});
      return SUCCESS;
    },
    async streamSound({ params }, context) {
      const { status, headers, body } = await service.stream(context.auth, params.id, context.raw?.header('range'));
      if (status === 416) return reply(416, undefined, headers);
      // The router pipes a Readable body (rest.ts); the generated type names the wire's bytes `string`.
      return reply(status, body as unknown as string, headers);
    },
  });
}
