/**
 * Setting presets: a user's saved settings (opaque JSON by kind, one default per kind), with the
 * plan quota `max_setting_presets` (0 = unlimited; the largest among the plans of the accounts
 * the user owns, else the default plan's). Operators list and delete any user's presets but never
 * see a payload: the admin reads do not select it.
 */
import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import { requireUserId, type AuthContext } from '../../auth/context';
import { AppError } from '../../errors';
import { jsonTextWithin } from '../../infra/json-bytes';
import type { ModuleApis } from '../contract';
import { MAX_PAYLOAD_BYTES, presetMessages } from './errors';
import type { AdminSettingPreset, PresetsRepo, SettingPreset } from './repo';

function jsonObject(value: unknown): Record<string, unknown> {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) throw AppError.validation(presetMessages.payloadNotObject);
  if (jsonTextWithin(value, MAX_PAYLOAD_BYTES) === null) throw AppError.validation(presetMessages.payloadTooLarge, { fields: [{ field: 'payload', message: presetMessages.payloadTooLarge }] });
  return value as Record<string, unknown>;
}

function nonBlank(field: string, value: string): string {
  const trimmed = value.trim();
  if (!trimmed) throw AppError.validation(presetMessages.blank(field));
  return trimmed;
}

export function createPresetsService(deps: { repo: PresetsRepo; knex: Knex; audit: Pick<ModuleApis['audit'], 'record'> }) {
  const { repo, knex, audit } = deps;

  async function own(ctx: AuthContext, id: string): Promise<SettingPreset> {
    const preset = await repo.byId(id);
    if (!preset || preset.userId !== requireUserId(ctx)) throw AppError.notFound(presetMessages.notFound);
    return preset;
  }

  return {
    async mine(ctx: AuthContext): Promise<SettingPreset[]> {
      return repo.ofUser(requireUserId(ctx));
    },

    async create(ctx: AuthContext, input: { kind: string; name: string; payload: unknown; isDefault?: boolean | null }): Promise<SettingPreset> {
      const userId = requireUserId(ctx);
      const kind = nonBlank('kind', input.kind);
      const name = nonBlank('name', input.name);
      const payload = jsonObject(input.payload);
      const id = randomUUID();
      await knex.transaction(async (trx) => {
        // The user's row is the lock: two saves at once cannot both pass the quota.
        await repo.lockUser(trx, userId);
        const max = await repo.quota(trx, userId);
        if (max > 0 && (await repo.countIn(trx, userId)) >= max) throw new AppError('PLAN_LIMIT_REACHED', presetMessages.limitReached(max));
        if (input.isDefault) await repo.clearDefault(trx, userId, kind);
        await repo.insert(trx, { id, user_id: userId, kind, name, payload, is_default: Boolean(input.isDefault) });
      });
      return (await repo.byId(id))!;
    },

    async update(ctx: AuthContext, id: string, input: { name?: string | null; payload?: unknown; isDefault?: boolean | null }): Promise<SettingPreset> {
      const preset = await own(ctx, id);
      const name = input.name === undefined || input.name === null ? undefined : nonBlank('name', input.name);
      const payload = input.payload === undefined || input.payload === null ? undefined : jsonObject(input.payload);
      const isDefault = input.isDefault === undefined || input.isDefault === null ? undefined : input.isDefault;
      await knex.transaction(async (trx) => {
        if (isDefault) await repo.clearDefault(trx, preset.userId, preset.kind);
        await repo.update(trx, id, { name, payload, is_default: isDefault });
      });
      return (await repo.byId(id))!;
    },

    async remove(ctx: AuthContext, id: string): Promise<void> {
      await own(ctx, id);
      await knex.transaction((trx) => repo.delete(trx, id));
    },

    async ofUserForAdmin(userId: string): Promise<AdminSettingPreset[]> {
      return repo.ofUserForAdmin(userId);
    },

    async adminDelete(ctx: AuthContext, id: string): Promise<void> {
      const preset = await repo.byId(id);
      if (!preset) throw AppError.notFound(presetMessages.notFound);
      await knex.transaction(async (trx) => {
        await repo.delete(trx, id);
        await audit.record(
          { scope: 'system', type: 'system:user_setting_preset_deleted', userId: preset.userId, actorId: ctx.userId, metadata: { preset_id: id, kind: preset.kind, name: preset.name } },
          trx,
        );
      });
    },
  };
}

export type PresetsService = ReturnType<typeof createPresetsService>;
