/** REST bindings of plans and the admin feature levers, in domain form. */
import { bindRest } from '../../http/rest';
import { reply } from '../../http/envelope';
import type { PlansService } from './service';

export function createPlansRest(service: PlansService) {
  return bindRest({
    adminCreatePlan: ({ body }, context) => service.createPlan(context.auth, body),
    adminUpdatePlan: ({ params, body }, context) => service.updatePlan(context.auth, params.id, body),
    async adminDeletePlan({ params }, context) {
      await service.deletePlan(context.auth, params.id);
      return reply(204, undefined);
    },
    adminSetPlanFeatures: ({ params, body }, context) => service.setPlanFeatures(context.auth, params.id, body.features),
    adminSetFeatureFlag: async ({ params, body }, context) => {
      const flag = await service.setFlag(context.auth, params.key, body.enabled);
      return { ...flag, category: flag.category as 'feature' | 'widget' | 'integration' | 'bot_module' | 'system' };
    },
    adminSetAccountPlan: ({ params, body }, context) => service.setAccountPlan(context.auth, params.id, body.planId),
    adminSetAccountRetention: ({ params, body }, context) => service.setAccountRetention(context.auth, params.id, body.chatRetentionDays ?? null),
    adminSetAccountFeatureOverride: ({ params, body }, context) => service.setAccountOverride(context.auth, params.id, params.key, body.enabled ?? null),
  });
}
