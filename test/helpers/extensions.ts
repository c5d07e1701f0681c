/**
 * An extension made the way a developer makes one, through the API: an approved developer
 * profile, an extension with a version whose manifest declares `permissions`, published and
 * approved by review; then installed into an account, which answers the install's `lm_ext_` token.
 */
import { randomUUID } from 'node:crypto';
import type { TestApp } from './app';
import { api, devLogin, type LoggedIn } from './users';

type Json = Record<string, any>;
const slug = (prefix: string) => `${prefix}-${randomUUID().slice(0, 8)}`;

function expectStatus(what: string, res: { status: number; body: unknown }, status: number): void {
  if (res.status !== status) throw new Error(`${what}: expected ${status}, got ${res.status} ${JSON.stringify(res.body)}`);
}

/** A developer whose application `admin` (holding the bootstrap admin role) approved, with the slug of their public profile. */
export async function approvedDeveloper(t: Pick<TestApp, 'url'>, admin: LoggedIn): Promise<LoggedIn & { profileSlug: string }> {
  const dev = await devLogin(t);
  const profileSlug = slug('studio');
  const applied = await api(t, 'POST', '/developer/application', {
    token: dev.accessToken,
    body: { application_type: 'solo', display_name: `Dev ${profileSlug}`, slug: profileSlug, description: 'Builds things', motivation: 'Fun', what_to_build: 'Bots' },
  });
  expectStatus('developer application', applied, 201);
  expectStatus('application approval', await api(t, 'POST', `/admin/developer-applications/${(applied.body.data as Json).id}/approve`, { token: admin.accessToken, body: {} }), 200);
  return { ...dev, profileSlug };
}

/** A published extension (created, bundle uploaded, submitted, approved) declaring `permissions`. */
export async function publishedExtension(t: Pick<TestApp, 'url'>, dev: LoggedIn, admin: LoggedIn, name: string, permissions: readonly string[]): Promise<Json> {
  const created = await api(t, 'POST', '/developer/extensions', { token: dev.accessToken, body: { name, slug: slug('ext') } });
  expectStatus('extension creation', created, 201);
  const ext = created.body.data as Json;
  const version = await api(t, 'POST', `/developer/extensions/${ext.id}/versions`, { token: dev.accessToken, body: { version: '1.0.0' } });
  expectStatus('version creation', version, 201);
  const versionId = (version.body.data as Json).id as string;
  const manifest = { handlers: ['run'], permissions };
  expectStatus('bundle upload', await api(t, 'PUT', `/developer/extensions/${ext.id}/versions/${versionId}/bundle`, { token: dev.accessToken, body: { manifest, handler_code: 'export function run() {}' } }), 200);
  expectStatus('submission', await api(t, 'POST', `/developer/extensions/${ext.id}/versions/${versionId}/publish`, { token: dev.accessToken }), 200);
  expectStatus('review approval', await api(t, 'POST', `/admin/extension-reviews/${versionId}/approve`, { token: admin.accessToken, body: {} }), 200);
  return ext;
}

/** Installs `ext` into the user's current account granting `permissions`; answers the install's id and token. */
export async function installExtension(t: Pick<TestApp, 'url'>, user: LoggedIn, ext: Json, permissions: readonly string[]): Promise<{ id: string; token: string; permissions: string[] }> {
  const res = await api(t, 'POST', '/extension-installs', { token: user.accessToken, body: { extension_id: ext.id, permissions } });
  expectStatus('install', res, 201);
  const data = res.body.data as Json;
  return { id: data.id as string, token: data.token.token as string, permissions: data.permissions as string[] };
}
