/** REST bindings of setting presets, in domain form. */
import { SUCCESS, reply } from '../../http/envelope';
import { bindRest } from '../../http/rest';
import type { PresetsService } from './service';

export function createPresetsRest(service: PresetsService) {
  return bindRest({
    mySettingPresets: (_r, context) => service.mine(context.auth),
    createSettingPreset: ({ body }, context) => service.create(context.auth, body),
    updateSettingPreset: ({ params, body }, context) => service.update(context.auth, params.id, body),
    async deleteSettingPreset({ params }, context) {
      await service.remove(context.auth, params.id);
      return SUCCESS;
    },
    adminUserSettingPresets: ({ params }) => service.ofUserForAdmin(params.id),
    async adminDeleteUserSettingPreset({ params }, context) {
      await service.adminDelete(context.auth, params.id);
      return reply(204, undefined);
    },
  });
}
