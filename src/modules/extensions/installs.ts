/**
 * Account installs of extensions: what an install grants and the `lm_ext_`
 * token it mints, the purchase a paid extension needs first, and what a refund does to it.
 *
 * - Installing a paid extension needs a completed (not refunded) purchase of it by the account,
 *   as the payment-connect webhook recorded it (`recordPurchase`).
 * - The install grants account permissions the version's manifest asks for (all of them unless
 *   the request names a subset), each held by the installer. Its token (Part 1: `lm_ext_`, TTL
 *   15 minutes, scoped to extension, install and account) holds exactly those; only its SHA-256 is
 *   stored (src/auth/store.ts) and the plain token is answered once. A new token revokes the last.
 * - Uninstalling, disabling and a refund revoke the token; a refund also disables the install
 *   (`disabled_reason: refunded`), which can be enabled again only after a new purchase.
 * - An extension priced as a subscription needs an active subscription of the account, as the
 *   payment-connect webhook recorded it (the payouts module's `extension_subscriptions`, read
 *   here, never written). When none is active any more its installs are disabled and their tokens
 *   revoked in the webhook's transaction (`subscriptionChanged`): `subscription_canceled`, or
 *   `subscription_past_due` while an invoice failed; a paid invoice enables the past-due ones
 *   again (their token is minted on the next token request). Enabling an install of a paid
 *   extension always needs the purchase or an active subscription.
 */
import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import type { components } from '../../../generated/openapi';
import { hasPermission, requireAccountId, type AuthContext } from '../../auth/context';
import type { Revocations } from '../../auth/revocations';
import type { CredentialStore } from '../../auth/store';
import { AppError } from '../../errors';
import type { Camelize } from '../../http/mapping';
import type { Logger } from '../../infra/logger';
import { extensionMessages as m } from './errors';
import type { Extension, ExtensionInstall, ExtensionVersion, InstallConfig } from './records';
import type { ExtensionsRepo, InstallGrant } from './repo';

type Schemas = components['schemas'];
export type InstallToken = Camelize<Schemas['ExtensionInstallToken']>;

/** Subscription states that entitle an account to its installs (the provider's `active` and `trialing`). */
const ACTIVE_SUBSCRIPTION = ['active', 'trialing'];

/** Why the webhook disabled an install (`disabled_reason`; the spec lists them). */
export type DisabledReason = 'refunded' | 'subscription_canceled' | 'subscription_past_due';

/** Part 1, "Limits": an extension token lives 15 minutes. */
export const EXTENSION_TOKEN_TTL_MS = 15 * 60 * 1000;

export interface InstallsDeps {
  repo: ExtensionsRepo;
  knex: Knex;
  credentials: CredentialStore;
  revocations: Revocations;
  log: Logger;
  /** Whether the user may install what is not published (tester, developer, access grant). */
  mayTest(userId: string, row: Extension): Promise<boolean>;
}

export function createInstalls(deps: InstallsDeps) {
  const { repo, knex, credentials, revocations } = deps;

  /**
   * Revokes an install's current token (if any) in the caller's transaction and remembers its
   * hash in `revoked`; `announce` closes its sockets on every node once the transaction committed.
   */
  async function revokeToken(tokenId: string | null | undefined, db: Knex.Transaction, revoked: string[]): Promise<void> {
    if (!tokenId) return;
    const row = await credentials.byId(tokenId, db);
    if (row && (await credentials.revoke(tokenId, db))) revoked.push(row.token_hash);
  }
  const announce = async (revoked: string[]) => {
    for (const hash of revoked) await revocations.announce({ credential_id: hash, kind: 'token' });
  };

  /** Mints the install's token (revoking the previous one) in the caller's transaction. */
  async function mintToken(
    install: Pick<InstallGrant, 'id' | 'accountId' | 'extensionId'> & { tokenId?: string | null },
    permissions: string[],
    createdBy: string | null,
    trx: Knex.Transaction,
    revoked: string[],
  ): Promise<InstallToken> {
    const expiresAt = new Date(Date.now() + EXTENSION_TOKEN_TTL_MS);
    const { token, row } = await credentials.mint(
      { kind: 'extension', accountId: install.accountId, createdBy, subjectId: install.id, extensionId: install.extensionId, permissions, expiresAt, label: 'extension install' },
      trx,
    );
    await trx('extension_installs').where({ id: install.id }).update({ token_id: row.id });
    await revokeToken(install.tokenId, trx, revoked);
    return { token, expiresAt: expiresAt.toISOString(), permissions };
  }

  /** The permissions an install grants: the manifest's (or the requested subset), each held by the installer. */
  function grantedPermissions(auth: AuthContext, version: ExtensionVersion, requested: string[] | undefined): string[] {
    const declared = version.manifest?.permissions ?? [];
    const wanted = requested ?? declared;
    const unknown = wanted.find((p) => !declared.includes(p));
    if (unknown !== undefined) throw AppError.validation(m.permissionNotRequested(unknown), { fields: [{ field: 'permissions', message: m.permissionNotRequested(unknown) }] });
    const missing = wanted.find((p) => !hasPermission(auth, p));
    if (missing !== undefined) throw AppError.forbidden(m.cannotGrant(missing));
    return [...new Set(wanted)].sort();
  }

  /** A completed, unrefunded purchase of the extension by the account (the purchase's external id). */
  async function purchaseOf(extensionId: string, accountId: string, db: Knex | Knex.Transaction): Promise<string | null> {
    const row = (await db('extension_purchases').where({ extension_id: extensionId, account_id: accountId, status: 'completed' }).orderBy('created_at', 'desc').first('external_id')) as
      | { external_id: string }
      | undefined;
    return row?.external_id ?? null;
  }

  /**
   * The account's standing on a subscription-priced extension: `active` when any of its
   * subscriptions is, otherwise the newest one's (`past_due`, `canceled`, ...), null with none.
   */
  async function subscriptionState(extensionId: string, accountId: string, db: Knex | Knex.Transaction): Promise<'active' | 'past_due' | 'canceled' | null> {
    const rows = (await db('extension_subscriptions').where({ extension_id: extensionId, account_id: accountId }).orderBy('updated_at', 'desc').select('status')) as { status: string }[];
    if (rows.length === 0) return null;
    if (rows.some((r) => ACTIVE_SUBSCRIPTION.includes(r.status))) return 'active';
    return rows[0]!.status === 'past_due' || rows[0]!.status === 'unpaid' ? 'past_due' : 'canceled';
  }

  /** Whether the account may run a paid extension (free ones always); read under the extension's lock. */
  async function entitled(row: Pick<Extension, 'id' | 'pricingType'>, accountId: string, db: Knex.Transaction): Promise<boolean> {
    if (row.pricingType === 'free') return true;
    if (row.pricingType === 'subscription') return (await subscriptionState(row.id, accountId, db)) === 'active';
    return (await purchaseOf(row.id, accountId, db)) !== null;
  }

  return {
    /**
     * The subscription hook the payment-connect webhook calls in its transaction (through the
     * module API): brings the account's installs of a subscription-priced extension in line with
     * its subscriptions. None active: a canceled one disables every install
     * (`subscription_canceled`), a past-due one the enabled installs (`subscription_past_due`),
     * and their tokens are revoked; active again: the installs disabled for past due are enabled
     * (no token is minted: the next token request does). Answers what to run once the
     * transaction committed (closing the revoked tokens' sockets).
     */
    async subscriptionChanged(change: { extensionId: string; accountId: string }, trx: Knex.Transaction): Promise<() => Promise<void>> {
      const revoked: string[] = [];
      const { extensionId, accountId } = change;
      await repo.lockExtension(extensionId, trx);
      const extension = await repo.extensionById(extensionId, trx);
      if (extension?.pricingType !== 'subscription') return () => announce(revoked);
      const state = await subscriptionState(extensionId, accountId, trx);
      const installs = () => trx('extension_installs').where({ extension_id: extensionId, account_id: accountId });
      if (state === 'active') {
        const enabled = await installs().where({ enabled: false, disabled_reason: 'subscription_past_due' }).update({ enabled: true, disabled_reason: null, updated_at: trx.fn.now() });
        if (enabled) deps.log.info({ extension_id: extensionId, account_id: accountId, installs: enabled }, 'extension installs enabled: subscription active again');
      } else if (state !== null) {
        const reason: DisabledReason = state === 'past_due' ? 'subscription_past_due' : 'subscription_canceled';
        // Past due leaves installs the account disabled itself alone (their reason stays theirs).
        const affected = (await (state === 'past_due' ? installs().where({ enabled: true }) : installs()).select('id', 'token_id')) as { id: string; token_id: string | null }[];
        for (const install of affected) {
          await trx('extension_installs').where({ id: install.id }).update({ enabled: false, disabled_reason: reason, token_id: null, updated_at: trx.fn.now() });
          await revokeToken(install.token_id, trx, revoked);
        }
        if (affected.length) deps.log.info({ extension_id: extensionId, account_id: accountId, installs: affected.length, reason }, 'extension installs disabled: subscription not active');
      }
      return () => announce(revoked);
    },

    async installs(auth: AuthContext): Promise<ExtensionInstall[]> {
      return repo.installsOf(requireAccountId(auth));
    },

    async install(auth: AuthContext, input: { extensionId: string; version?: string; permissions?: string[] }): Promise<ExtensionInstall & { token: InstallToken }> {
      const accountId = requireAccountId(auth);
      const notFound = () => AppError.notFound(m.extensionNotFound);
      const row = await repo.extensionById(input.extensionId);
      if (!row) throw notFound();
      // Testers, access grants and the extension's own developers may install what is not published yet.
      const mayTest = auth.userId !== null && (await deps.mayTest(auth.userId, row));
      let version: ExtensionVersion | undefined;
      if (input.version !== undefined) {
        version = await repo.versionByName(row.id, input.version);
        if (!version || !(version.status === 'published' || (mayTest && version.status === 'uploaded'))) {
          throw row.status === 'published' || mayTest ? AppError.notFound(m.versionNotFound) : notFound();
        }
      } else if (row.status === 'published') {
        version = await repo.latestVersion(row.id, ['published']);
      } else if (mayTest) {
        version = await repo.latestVersion(row.id, ['uploaded', 'pending_review', 'published']);
      } else {
        throw notFound();
      }
      if (!version) throw new AppError('CONFLICT', m.noInstallableVersion);
      const permissions = grantedPermissions(auth, version, input.permissions);
      const id = randomUUID();
      const token = await knex.transaction(async (trx) => {
        // The purchase is read under the extension's lock, so a refund recorded meanwhile is seen.
        await repo.lockExtension(row.id, trx);
        const purchase = row.pricingType === 'one_time' ? await purchaseOf(row.id, accountId, trx) : null;
        if (row.pricingType === 'one_time' && !purchase) throw AppError.forbidden(m.purchaseRequired);
        if (row.pricingType === 'subscription' && !(await entitled(row, accountId, trx))) throw AppError.forbidden(m.subscriptionRequired);
        const inserted = await trx('extension_installs')
          .insert({ id, account_id: accountId, extension_id: row.id, version_id: version.id, installed_by: auth.userId, config: JSON.stringify({}), permissions: JSON.stringify(permissions), purchase_external_id: purchase })
          .onConflict(['account_id', 'extension_id'])
          .ignore()
          .returning('id');
        if (inserted.length === 0) throw new AppError('CONFLICT', m.alreadyInstalled);
        return mintToken({ id, accountId, extensionId: row.id }, permissions, auth.userId, trx, []);
      });
      return { ...(await repo.installById(accountId, id))!, token };
    },

    async updateInstall(auth: AuthContext, id: string, input: { enabled?: boolean; config?: InstallConfig }): Promise<ExtensionInstall> {
      const accountId = requireAccountId(auth);
      const revoked: string[] = [];
      await knex.transaction(async (trx) => {
        const current = await repo.installGrant(accountId, id, trx);
        if (!current) throw AppError.notFound(m.installNotFound);
        const values: Record<string, unknown> = { updated_at: trx.fn.now() };
        if (input.enabled === true) {
          // A paid install runs only while it is paid for: a refunded one comes back with a new
          // purchase, a subscription's once the subscription is active again.
          await repo.lockExtension(current.extensionId, trx);
          const extension = await repo.extensionById(current.extensionId, trx);
          if (extension && !(await entitled(extension, accountId, trx))) throw new AppError('CONFLICT', extension.pricingType === 'subscription' ? m.subscriptionInactive : m.installRefunded);
          values.disabled_reason = null;
        }
        if (input.enabled !== undefined) values.enabled = input.enabled;
        if (input.config !== undefined) values.config = JSON.stringify(input.config);
        if (input.enabled === false) values.token_id = null;
        await trx('extension_installs').where({ account_id: accountId, id }).update(values);
        if (input.enabled === false) await revokeToken(current.tokenId, trx, revoked);
      });
      await announce(revoked);
      return (await repo.installById(accountId, id))!;
    },

    async uninstall(auth: AuthContext, id: string): Promise<void> {
      const accountId = requireAccountId(auth);
      const revoked: string[] = [];
      await knex.transaction(async (trx) => {
        const current = await repo.installGrant(accountId, id, trx);
        if (!current || !(await repo.deleteInstall(accountId, id, trx))) throw AppError.notFound(m.installNotFound);
        await revokeToken(current.tokenId, trx, revoked);
      });
      await announce(revoked);
    },

    async issueToken(auth: AuthContext, id: string): Promise<InstallToken> {
      const accountId = requireAccountId(auth);
      const revoked: string[] = [];
      const token = await knex.transaction(async (trx) => {
        await trx('extension_installs').where({ account_id: accountId, id }).forUpdate().first('id');
        const current = await repo.installGrant(accountId, id, trx);
        if (!current) throw AppError.notFound(m.installNotFound);
        if (!current.enabled) throw new AppError('CONFLICT', m.installDisabled);
        return mintToken(current, current.permissions, auth.userId, trx, revoked);
      });
      await announce(revoked);
      return token;
    },

    /**
     * The refund hook the payment-connect webhook calls (through `refundPurchase` of the module
     * API): the purchase is marked refunded, and every install that purchase paid for, or that the
     * account holds of the extension with no other completed purchase, is disabled and its token
     * revoked, in one transaction. Unknown or already refunded ids change nothing.
     */
    async refundPurchase(externalId: string): Promise<void> {
      const revoked: string[] = [];
      await knex.transaction(async (trx) => {
        const refunded = (await trx('extension_purchases')
          .where({ external_id: externalId, status: 'completed' })
          .update({ status: 'refunded', refunded_at: trx.fn.now() })
          .returning(['extension_id', 'account_id'])) as Pick<Schemas['ExtensionPurchase'], 'extension_id' | 'account_id'>[];
        for (const purchase of refunded) {
          if (!purchase.account_id) continue;
          await repo.lockExtension(purchase.extension_id, trx);
          if (await purchaseOf(purchase.extension_id, purchase.account_id, trx)) continue;
          const installs = (await trx('extension_installs').where({ extension_id: purchase.extension_id, account_id: purchase.account_id }).select('id', 'token_id')) as { id: string; token_id: string | null }[];
          for (const install of installs) {
            await trx('extension_installs').where({ id: install.id }).update({ enabled: false, disabled_reason: 'refunded', token_id: null, updated_at: trx.fn.now() });
            await revokeToken(install.token_id, trx, revoked);
          }
          if (installs.length) deps.log.info({ extension_id: purchase.extension_id, account_id: purchase.account_id, installs: installs.length }, 'refunded extension installs disabled');
        }
      });
      await announce(revoked);
    },
  };
}

export type Installs = ReturnType<typeof createInstalls>;
