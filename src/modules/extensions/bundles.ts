/**
 * Bundle serving: which uploaded version an install runs, and the bundle itself under an
 * immutable URL named by the SHA-256 of its content (bundle-content.ts). The version follows the
 * review state (the latest `published` one; while none is, the version the install was made
 * with), except for a user who develops the extension with `extension_dev_mode` on: they get the
 * latest upload whatever its review state (Part 1, `MeResult.extensionDevMode`).
 * When an operator approves a version, every install of the extension hears it on its
 * `ext-storage:{install_id}` channel (`extension:updated`, with the bundle it runs now), after the
 * approval committed; a bus failure is logged, never a failed approval.
 * Reads `extension_installs` and `extension_versions`, and the `users` row's own
 * `extension_dev_mode` switch (written by the accounts module's `updateMe`); writes nothing.
 */
import type { Knex } from 'knex';
import type { components } from '../../../generated/openapi';
import { requireAccountId, type AuthContext } from '../../auth/context';
import { AppError } from '../../errors';
import type { Bus } from '../../infra/bus';
import type { Logger } from '../../infra/logger';
import { shapeOf, toWire, type Camelize } from '../../http/mapping';
import { bundleContent } from './bundle-content';
import { extensionMessages as m } from './errors';
import { UUID_RE } from '../../infra/ids';

type Schemas = components['schemas'];
export type ExtensionInstallBundle = Camelize<Schemas['ExtensionInstallBundle']>;
export type ExtensionBundle = Camelize<Schemas['ExtensionBundle']>;

/** The frame's data: the install's bundle as GET /v1/extension-installs/{id}/bundle answers it. */
const installBundleWire = shapeOf({ $ref: '#/components/schemas/ExtensionInstallBundle' });

/** A bundle's content never changes under its hash: any cache may keep it for a year. */
export const BUNDLE_CACHE_CONTROL = 'public, max-age=31536000, immutable';

const SHA256_RE = /^[0-9a-f]{64}$/;

interface VersionRow {
  id: string;
  version: string;
  status: ExtensionInstallBundle['status'];
  bundle_sha256: string;
}

export function createBundles(deps: { knex: Knex; bus: Bus; log: Logger; develops: (auth: AuthContext, extensionId: string) => Promise<boolean> }) {
  const { knex, bus, log, develops } = deps;
  const uploaded = (extensionId: string) =>
    knex('extension_versions').where({ extension_id: extensionId }).whereNotNull('bundle_sha256').select('id', 'version', 'status', 'bundle_sha256');

  /** Whether the caller is a user whose extension_dev_mode is on and who develops the extension. */
  async function devModeFor(auth: AuthContext, extensionId: string): Promise<boolean> {
    if ((auth.kind !== 'jwt' && auth.kind !== 'user_api_key') || !auth.userId) return false;
    // users.devMode: the user's own switch (accounts' updateMe writes it).
    const user = (await knex('users').where({ id: auth.userId }).first('extension_dev_mode')) as { extension_dev_mode: boolean } | undefined;
    return Boolean(user?.extension_dev_mode) && develops(auth, extensionId);
  }

  /** The latest published version with a bundle: what every install runs outside dev mode. */
  const latestPublished = async (extensionId: string) =>
    (await uploaded(extensionId).where({ status: 'published' }).orderBy([{ column: 'published_at', order: 'desc' }, { column: 'created_at', order: 'desc' }]).first()) as VersionRow | undefined;

  const describe = (install: { id: string; extension_id: string }, chosen: VersionRow, devMode: boolean): ExtensionInstallBundle => {
    const sha256 = chosen.bundle_sha256.trim();
    return { installId: install.id, extensionId: install.extension_id, versionId: chosen.id, version: chosen.version, status: chosen.status, sha256, url: `/v1/extension-bundles/${sha256}`, devMode };
  };

  return {
    /** extension_installs.ofExtension: tells every install of the extension which bundle it runs now (after an approval). */
    async announcePublished(extensionId: string): Promise<void> {
      // The approval has committed: a failure here is logged, never answered as a failed approval.
      try {
        const chosen = await latestPublished(extensionId);
        if (!chosen) return;
        const installs = (await knex('extension_installs').where({ extension_id: extensionId }).select('id', 'extension_id')) as { id: string; extension_id: string }[];
        for (const install of installs) {
          const data = toWire(describe(install, chosen, false), installBundleWire);
          await bus
            .publish(`ext-storage:${install.id}`, JSON.stringify({ event_type: 'extension:updated', data }))
            .catch((error: unknown) => log.warn({ err: error, installId: install.id }, 'extension update broadcast failed'));
        }
      } catch (error) {
        log.warn({ err: error, extensionId }, 'extension update broadcast failed');
      }
    },

    /** extension_versions.bundleOfInstall: the version the install runs now, and its bundle's URL. */
    async forInstall(auth: AuthContext, installId: string): Promise<ExtensionInstallBundle> {
      const accountId = requireAccountId(auth);
      if (!UUID_RE.test(installId)) throw AppError.notFound(m.installNotFound);
      const install = (await knex('extension_installs').where({ id: installId, account_id: accountId }).first('id', 'extension_id', 'version_id')) as
        | { id: string; extension_id: string; version_id: string | null }
        | undefined;
      if (!install) throw AppError.notFound(m.installNotFound);
      const devMode = await devModeFor(auth, install.extension_id);
      let chosen: VersionRow | undefined;
      if (devMode) {
        chosen = (await uploaded(install.extension_id).orderBy([{ column: 'uploaded_at', order: 'desc' }, { column: 'created_at', order: 'desc' }]).first()) as VersionRow | undefined;
      } else {
        chosen = await latestPublished(install.extension_id);
        if (!chosen && install.version_id) chosen = (await uploaded(install.extension_id).where({ id: install.version_id }).first()) as VersionRow | undefined;
      }
      if (!chosen) throw AppError.notFound(m.bundleNotFound);
      return describe(install, chosen, devMode);
    },

    /** extension_versions.bundleByHash: the content any uploaded version with this hash holds. */
    async byHash(sha256: string): Promise<{ bundle: ExtensionBundle; headers: Record<string, string> }> {
      if (!SHA256_RE.test(sha256)) throw AppError.notFound(m.bundleNotFound);
      const row = (await knex('extension_versions').where({ bundle_sha256: sha256 }).first('manifest', 'handler_code')) as { manifest: unknown; handler_code: string } | undefined;
      if (!row) throw AppError.notFound(m.bundleNotFound);
      // Served in wire form as hashed (the router leaves wire members as they are).
      return {
        bundle: bundleContent(row.manifest, row.handler_code) as unknown as ExtensionBundle,
        headers: { 'Cache-Control': BUNDLE_CACHE_CONTROL, ETag: `"${sha256}"` },
      };
    },
  };
}

export type Bundles = ReturnType<typeof createBundles>;
