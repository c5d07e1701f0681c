/**
 * Developer keys (`lm_dev_`; Part 1, "Key rules" 4): a kind of the one key lifecycle (the apikeys
 * module's `keys`), owned by the caller's developer profile or by a team (`team-secrets:edit`).
 * The credentials row carries the secret's hash and scopes; this module adds the owner row
 * (exactly one of profile and team) in the mint's transaction. Revoking keeps the row (audit
 * trail); a profile key names its developer's user, a team key none (src/auth/verifiers.ts reads
 * the binding so).
 */
import { requireUserId, type AuthContext } from '../../auth/context';
import { AppError, messages } from '../../errors';
import type { KeyKind } from '../apikeys';
import type { DeveloperAccess, DeveloperDeps } from './access';
import { developerMessages as M } from './errors';
import type { DeveloperKeyRow } from './repo';
import type { CreateDeveloperKeyInput, DeveloperApiKey } from './types';

/** A key's owner columns: exactly one of the two is set. */
type KeyOwner = Pick<DeveloperKeyRow, 'developer_id' | 'team_id'>;

/** The owner as audit metadata: `developer_id` or `team_id`. */
const ownerMetadata = (row: KeyOwner) => (row.developer_id !== null ? { developer_id: row.developer_id } : { team_id: row.team_id });

export function createDeveloperKeys({ repo, apikeys }: DeveloperDeps, access: DeveloperAccess) {
  const { keys } = apikeys;
  /** A developer key: its owner (profile or team) and creator, then the common key columns. */
  const toKey = keys.record('DeveloperApiKey');

  /** A developer key the caller may manage: their profile's, or their team's with `team-secrets:edit`. */
  async function manageableKey(ctx: AuthContext, id: string): Promise<DeveloperKeyRow> {
    const userId = requireUserId(ctx);
    const row = await repo.key(id);
    if (!row || row.revoked_at !== null) throw AppError.notFound(M.developerKeyNotFound);
    if (row.developer_id !== null) {
      const profile = await repo.profileOfUser(userId);
      if (profile?.id !== row.developer_id) throw AppError.notFound(M.developerKeyNotFound);
      return row;
    }
    const found = await access.teamAccess(row.team_id!, userId);
    if (!found) throw AppError.notFound(M.developerKeyNotFound);
    if (!found.permissions.includes('team-secrets:edit')) throw AppError.forbidden(messages.missingPermission('team-secrets:edit'));
    return row;
  }

  const developerKey: KeyKind<KeyOwner & { userId: string }, DeveloperKeyRow, DeveloperApiKey> = {
    credential: 'developer_api_key',
    registry: 'developer',
    notFound: M.developerKeyNotFound,
    removal: 'revoke',
    audit: { scope: 'user', created: 'user:developer_api_key_created', updated: 'user:developer_api_key_updated', removed: 'user:developer_api_key_revoked' },
    expiry: 'before-registry',
    columns: (owner) => ({ userId: owner.team_id === null ? owner.userId : null, subjectId: owner.developer_id ?? owner.team_id, createdBy: owner.userId }),
    ownerMetadata,
    afterMint: (trx, row, owner) => repo.insertKeyOwner(trx, { id: row.id, developer_id: owner.developer_id, team_id: owner.team_id }),
    find: manageableKey,
    // The record joins the owner row, so it is read back.
    view: async (row) => toKey((await repo.key(row.id))!),
  };

  return {
    /** Own profile keys plus the keys of every team the caller belongs to (Part 1 `developerApiKeys`; never the secret). */
    async developerApiKeys(ctx: AuthContext): Promise<DeveloperApiKey[]> {
      const userId = requireUserId(ctx);
      const [profile, teams] = await Promise.all([repo.profileOfUser(userId), repo.teamsOfUser(userId)]);
      if (!profile && teams.length === 0) throw AppError.forbidden(messages.developerOnly);
      return (await repo.keysOf(profile?.id ?? null, teams.map((team) => team.id))).map(toKey);
    },

    async createDeveloperApiKey(ctx: AuthContext, input: CreateDeveloperKeyInput): Promise<{ key: string; developerApiKey: DeveloperApiKey }> {
      const profile = await access.requireProfile(ctx);
      const userId = requireUserId(ctx);
      const teamId = input.teamId ?? null;
      const made = await keys.create(developerKey, ctx, input, async () => {
        if (teamId !== null) await access.requireTeam(ctx, teamId, 'team-secrets:edit');
        return teamId === null ? { developer_id: profile.id, team_id: null, userId } : { developer_id: null, team_id: teamId, userId };
      });
      return { key: made.key, developerApiKey: made.record };
    },

    /** Label only: scopes are immutable. */
    updateDeveloperApiKey: (ctx: AuthContext, id: string, label: string): Promise<DeveloperApiKey> => keys.rename(developerKey, ctx, id, label),

    /** Soft revoke: the row stays (audit trail), authentication with it fails closed at once. */
    revokeDeveloperApiKey: (ctx: AuthContext, id: string): Promise<{ success: true; id: string }> => keys.remove(developerKey, ctx, id),
  };
}
