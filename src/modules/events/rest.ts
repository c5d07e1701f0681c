/**
 * REST bindings of the events surface, in domain form: the router maps names, pages with the
 * declared bounds and applies the envelopes the spec declares (src/http/rest.ts). The events
 * list, the product's main read, is declared `jsonText`: its page comes from the database as the
 * API's JSON text (repo.ts `textPage`) and the router writes the envelope around it, without
 * parsing and serialising every event (test/modules/events-splice.test.ts proves the bytes equal).
 */
import { reply } from '../../http/envelope';
import { bindRest } from '../../http/rest';
import type { EventsService } from './service';

export function createEventsRest(service: EventsService) {
  return bindRest(
    {
      events: ({ query, paging }, context) => service.listText(context.auth, query, paging, context.untilAnswered),
      event: ({ params }, context) => service.get(context.auth, params.id),
      async emitEvent({ body }, context) {
        const result = await service.emit(context.auth, body);
        return result.duplicate ? result : reply(201, result);
      },
      testEvent: ({ body }, context) => service.test(context.auth, body ?? {}),
    },
    { jsonText: ['events'] },
  );
}
