/** REST bindings of developer revenue, payout settings and payout requests, in domain form. */
import { bindRest } from '../../http/rest';
import type { PayoutsService } from './service';

export function createPayoutsRest(service: PayoutsService) {
  return bindRest({
    developerRevenue: ({ query }, context) => service.revenue(context.auth, query),
    developerPayoutSettings: ({ query }, context) => service.settings(context.auth, query),
    updateDeveloperPayoutSettings: ({ body }, context) => service.updateSettings(context.auth, body),
    developerPayouts: ({ query, paging }, context) => service.list(context.auth, query, paging),
    requestDeveloperPayout: ({ body }, context) => service.request(context.auth, body),
    developerPayout: ({ params }, context) => service.get(context.auth, params.id),
  });
}
