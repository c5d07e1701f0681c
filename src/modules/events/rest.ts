/**
 * REST bindings of the events surface, in domain form: the router maps names, pages with the
 * declared bounds and applies the envelopes the spec declares (src/http/rest.ts).
 */
import { reply } from '../../http/envelope';
import { bindRest } from '../../http/rest';
import type { EventsService } from './service';

export function createEventsRest(service: EventsService) {
  return bindRest({
    events: ({ query, paging }, context) => service.list(context.auth, query, paging, context.untilAnswered),
    event: ({ params }, context) => service.get(context.auth, params.id),
    async emitEvent({ body }, context) {
      const result = await service.emit(context.auth, body);
      return result.duplicate ? result : reply(201, result);
    },
    testEvent: ({ body }, context) => service.test(context.auth, body ?? {}),
  });
}
