/** REST bindings of privacy erasure, in domain form (the router maps names and writes the `data` envelope). */
import { bindRest } from '../../http/rest';
import type { PrivacyService } from './service';

export function createPrivacyRest(service: PrivacyService) {
  return bindRest({
    adminEraseChatSubject: ({ body }, context) => service.eraseChatSubject(context.auth, body),
    adminErasePlatformBMember: ({ params }, context) => service.erasePlatformBMember(context.auth, params.id),
  });
}
