/**
 * OpenAPI links: every create operation's success response links to the get,
 * update and delete operations of what it created, so stateful tools can chain create → read →
 * update → delete. Data-driven from the document: for every operation that declares links, the
 * create is performed (with a hand-written valid body below), then each link is followed with its
 * parameters resolved from the create's response (`$response.body#/...`) and request
 * (`$request.path.<name>`), reads first, deletes last; every hop must succeed (2xx, so neither 400
 * nor 404: the target exists and is addressable). A create that gains links without an entry here
 * fails the walk, so the table grows with the spec.
 */
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { openapiDocument } from '../../generated/openapi-document';
import { useTestApp } from '../helpers/app';
import { api, devLogin, joinAccount, type ApiResult, type LoggedIn } from '../helpers/users';

interface Link {
  operationId: string;
  parameters?: Record<string, string>;
}
interface Operation {
  operationId: string;
  responses: Record<string, { links?: Record<string, Link> }>;
}
const doc = openapiDocument as unknown as { paths: Record<string, Record<string, Operation>> };
const METHODS = ['get', 'post', 'put', 'patch', 'delete'] as const;

/** operationId → method and path template. */
const operations = new Map<string, { method: string; template: string }>();
for (const [template, item] of Object.entries(doc.paths)) {
  for (const method of METHODS) if (item[method]) operations.set(item[method].operationId, { method: method.toUpperCase(), template });
}

/** Every operation whose success response declares links, with them. */
const linked: { create: string; links: [string, Link][] }[] = [];
for (const item of Object.values(doc.paths)) {
  for (const method of METHODS) {
    const op = item[method];
    if (!op) continue;
    for (const [status, response] of Object.entries(op.responses)) {
      if (!/^2\d\d$/.test(status) || !response.links) continue;
      linked.push({ create: op.operationId, links: Object.entries(response.links) });
    }
  }
}

const ORDER: Record<string, number> = { GET: 0, PATCH: 1, PUT: 1, DELETE: 2 };
const fill = (template: string, params: Record<string, string>) =>
  `/v1${template.replace(/\{(\w+)\}/g, (_, name: string) => {
    if (params[name] === undefined) throw new Error(`no value for {${name}} in ${template}`);
    return encodeURIComponent(params[name]);
  })}`;

/** RFC 6901 pointer into a JSON value. */
function pointer(value: unknown, ref: string): unknown {
  return ref
    .split('/')
    .slice(1)
    .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'))
    .reduce<unknown>((at, key) => (at === null || typeof at !== 'object' ? undefined : (at as Record<string, unknown>)[key]), value);
}

/** A runtime expression of a link parameter, against the create's request and response. */
function resolve(expression: string, request: { path: Record<string, string> }, responseBody: unknown): string {
  if (expression.startsWith('$response.body#')) return String(pointer(responseBody, expression.slice('$response.body#'.length)));
  if (expression.startsWith('$request.path.')) return request.path[expression.slice('$request.path.'.length)]!;
  throw new Error(`unsupported link expression ${expression}`);
}

const operatorEmail = `ops-${randomUUID()}@example.test`;
const planFields = {
  name: 'Links plan',
  price_monthly: 500,
  price_yearly: 5000,
  is_public: false,
  sort_order: 90,
  max_overlays: 3,
  max_storage_bytes: 1024,
  max_upload_size_bytes: 1024,
  max_integrations: 1,
  chat_retention_days: 0,
  max_sounds: 1,
  max_sound_file_size: 1,
  max_sound_storage_bytes: 1,
  max_setting_presets: 0,
};
const short = () => randomUUID().slice(0, 8);

describe('OpenAPI links: create → read → update → delete', () => {
  const t = useTestApp({ rate_limits: { enabled: false }, auth: { bootstrap_admins: [operatorEmail] } });
  /** Account owner, super-admin operator and approved developer. */
  let owner: LoggedIn;
  /** A member of the owner's account (widget access). */
  let member: LoggedIn;
  /** Nobody's member yet (account invites); an extension tester. */
  let outsider: LoggedIn;

  beforeAll(async () => {
    owner = await devLogin(t, operatorEmail);
    const applied = await api(t, 'POST', '/developer/application', {
      token: owner.accessToken,
      body: { application_type: 'solo', display_name: 'Links', slug: `links-${short()}`, description: 'Builds things', motivation: 'Fun', what_to_build: 'Bots' },
    });
    const approved = await api(t, 'POST', `/admin/developer-applications/${applied.body.data.id}/approve`, { token: owner.accessToken, body: {} });
    if (approved.status !== 200) throw new Error(`approve: ${approved.status} ${JSON.stringify(approved.body)}`);
    member = await joinAccount(t, owner, await devLogin(t), { role: 'administrator' });
    outsider = await devLogin(t);
  });

  const post = async (token: string, url: string, body: unknown) => {
    const res = await api(t, 'POST', url, { token, body });
    if (res.status !== 201) throw new Error(`setup POST ${url}: ${res.status} ${JSON.stringify(res.body)}`);
    return res.body.data as Record<string, string>;
  };

  interface Fixture {
    /** Who creates and, unless `by` names another, follows the links. */
    actor: () => LoggedIn;
    /** Path parameters of the create (its parent resources, and anything the body needs), made fresh per walk. */
    path?: () => Promise<Record<string, string>>;
    body?: (setup: Record<string, string>) => unknown;
    /** A multipart create: the form to send. */
    form?: () => FormData;
    /** Bodies for the update targets, by operationId. */
    update?: Record<string, unknown>;
    /** A link target followed by another caller, by operationId. */
    by?: Record<string, () => LoggedIn>;
  }

  const fixtures: Record<string, Fixture> = {
    createPopoutToken: { actor: () => owner, body: () => ({ label: 'links', permissions: ['events:read'] }) },
    emitEvent: { actor: () => owner, body: () => ({ type: 'platform_a:follower', platform: 'platform_a', raw: { user_id: 'u1', user_name: 'Links' } }) },
    addExtensionScreenshot: {
      actor: () => owner,
      path: async () => ({ id: (await post(owner.accessToken, '/developer/extensions', { name: 'Shots', slug: `shots-${short()}` })).id! }),
      body: () => ({ url: 'https://example.com/shot.png', caption: 'Links' }),
    },
    installExtension: {
      actor: () => owner,
      path: async () => {
        const ext = await post(owner.accessToken, '/developer/extensions', { name: 'Installed', slug: `installed-${short()}` });
        const version = await post(owner.accessToken, `/developer/extensions/${ext.id}/versions`, { version: '1.0.0' });
        const base = `/developer/extensions/${ext.id}/versions/${version.id}`;
        const uploaded = await api(t, 'PUT', `${base}/bundle`, { token: owner.accessToken, body: { manifest: { handlers: ['greet'] }, handler_code: 'export function greet() {}' } });
        if (uploaded.status !== 200) throw new Error(`bundle: ${uploaded.status} ${JSON.stringify(uploaded.body)}`);
        const published = await api(t, 'POST', `${base}/publish`, { token: owner.accessToken });
        if (published.status !== 200) throw new Error(`publish: ${published.status} ${JSON.stringify(published.body)}`);
        return { extensionId: ext.id! };
      },
      body: (setup) => ({ extension_id: setup.extensionId }),
      update: { updateExtensionInstall: { enabled: false } },
    },
    createUserApiKey: { actor: () => owner, body: () => ({ label: 'links', permissions: ['events:read'] }), update: { updateUserApiKey: { label: 'renamed' } } },
    createAccountServiceKey: { actor: () => owner, body: () => ({ label: 'links', permissions: ['events:read'] }), update: { updateAccountServiceKey: { label: 'renamed' } } },
    adminCreateSystemKey: { actor: () => owner, body: () => ({ label: 'links', permissions: ['events:*'] }) },
    createAccountInvite: { actor: () => owner, body: () => ({ user_id: outsider.userId, role: 'viewer' }) },
    createAccountRole: {
      actor: () => owner,
      body: () => ({ name: `links-${short()}`, permissions: ['events:read'] }),
      update: { updateAccountRole: { name: `renamed-${short()}`, permissions: ['events:read', 'chat:read'] } },
    },
    uploadSound: {
      actor: () => owner,
      form: () => {
        const form = new FormData();
        form.append('name', 'Links');
        form.append('file', new Blob([readFileSync(path.join(__dirname, '../fixtures/audio/tone.wav'))], { type: 'audio/wav' }), 'tone.wav');
        return form;
      },
      update: { updateSound: { name: 'Renamed' } },
    },
    createOverlay: { actor: () => owner, body: () => ({ name: 'Links' }) },
    createSharedOverlayToken: {
      actor: () => owner,
      path: async () => ({ id: (await post(owner.accessToken, '/overlays', { name: 'Shared' })).id! }),
      body: () => ({ expires_at: new Date(Date.now() + 3_600_000).toISOString() }),
    },
    createWidget: { actor: () => owner, body: () => ({ name: 'Links' }) },
    grantWidgetAccess: {
      actor: () => owner,
      path: async () => ({ id: (await post(owner.accessToken, '/widgets', { name: 'Shared' })).id! }),
      body: () => ({ user_id: member.userId, role: 'editor' }),
    },
    adminCreateRole: { actor: () => owner, body: () => ({ name: `links-${short()}`, permissions: ['users:read'] }), update: { adminUpdateRole: { description: 'Renamed' } } },
    adminCreatePlan: {
      actor: () => owner,
      body: () => ({ slug: `l-${short()}`, ...planFields }),
      // A rewrite of every editable field (everything but the slug).
      update: { adminUpdatePlan: { ...planFields, name: 'Renamed plan', currency: 'USD' } },
    },
    createSettingPreset: { actor: () => owner, body: () => ({ kind: 'chat', name: `links-${short()}`, payload: { theme: 'dark' } }), update: { updateSettingPreset: { name: 'Renamed' } } },
    createDeveloperExtension: { actor: () => owner, body: () => ({ name: 'Links', slug: `links-${short()}` }), update: { updateDeveloperExtension: { name: 'Renamed' } } },
    addExtensionTester: {
      actor: () => owner,
      path: async () => ({ id: (await post(owner.accessToken, '/developer/extensions', { name: 'Tested', slug: `tested-${short()}` })).id! }),
      body: () => ({ user_id: outsider.userId }),
    },
    createDeveloperApiKey: { actor: () => owner, body: () => ({ label: 'links', permissions: ['extension-dev:read'] }), update: { updateDeveloperApiKey: { label: 'renamed' } } },
    createDeveloperTeam: { actor: () => owner, body: () => ({ name: 'Links', slug: `team-${short()}` }), update: { updateDeveloperTeam: { name: 'Renamed' } } },
    createDeveloperTeamInvite: {
      actor: () => owner,
      path: async () => ({ id: (await post(owner.accessToken, '/developer/teams', { name: 'Invites', slug: `team-${short()}` })).id! }),
      body: () => ({}),
    },
    createDeveloperTeamRole: {
      actor: () => owner,
      path: async () => ({ id: (await post(owner.accessToken, '/developer/teams', { name: 'Roles', slug: `team-${short()}` })).id! }),
      body: () => ({ name: `role-${short()}`, permissions: [] }),
      update: { updateDeveloperTeamRole: { name: `renamed-${short()}` } },
    },
    createIdea: { actor: () => owner, body: () => ({ title: `Links idea ${short()}`, description: 'Chain create, read, update, delete.' }), update: { updateIdea: { title: `Renamed idea ${short()}` } } },
    createIdeaCategory: { actor: () => owner, body: () => ({ name: `cat-${short()}` }), update: { updateIdeaCategory: { name: `renamed-${short()}` } } },
    createIdeaTag: { actor: () => owner, body: () => ({ name: `tag-${short()}` }), by: { deleteIdeaTag: () => owner } },
    createIdeaComment: {
      actor: () => owner,
      path: async () => ({ id: (await post(owner.accessToken, '/ideas', { title: `Commented ${short()}`, description: 'A place for a comment.' })).id! }),
      body: () => ({ body: 'A comment.' }),
      update: { updateIdeaComment: { body: 'An edited comment.' } },
    },
  };

  test('the document declares links, every one names an existing operation and fills its path', () => {
    expect(linked.length).toBeGreaterThanOrEqual(20);
    for (const { create, links } of linked) {
      expect([create, Boolean(fixtures[create])]).toEqual([create, true]);
      for (const [name, link] of links) {
        const target = operations.get(link.operationId);
        expect([create, name, Boolean(target)]).toEqual([create, name, true]);
        const needed = [...target!.template.matchAll(/\{(\w+)\}/g)].map((m) => m[1]).sort();
        expect([create, name, Object.keys(link.parameters ?? {}).sort()]).toEqual([create, name, needed]);
      }
    }
  });

  test.each(linked.map((l) => [l.create, l] as const))('%s: create, then follow every link', async (create, { links }) => {
    const fixture = fixtures[create]!;
    const { method, template } = operations.get(create)!;
    const params = fixture.path ? await fixture.path() : {};
    const actor = fixture.actor();
    let created: ApiResult;
    if (fixture.form) {
      const res = await fetch(`${t.url}${fill(template, params)}`, { method, headers: { authorization: `Bearer ${actor.accessToken}` }, body: fixture.form() });
      created = { status: res.status, headers: res.headers, body: (await res.json()) as ApiResult['body'] };
    } else {
      created = await api(t, method, fill(template, params).slice('/v1'.length), { token: actor.accessToken, body: fixture.body?.(params) ?? {} });
    }
    expect([create, created.status]).toEqual([create, expect.any(Number)]);
    if (created.status >= 300) throw new Error(`${create}: ${created.status} ${JSON.stringify(created.body)}`);

    const ordered = [...links].sort(([, a], [, b]) => ORDER[operations.get(a.operationId)!.method]! - ORDER[operations.get(b.operationId)!.method]!);
    for (const [name, link] of ordered) {
      const target = operations.get(link.operationId)!;
      const values = Object.fromEntries(Object.entries(link.parameters ?? {}).map(([k, v]) => [k, resolve(v, { path: params }, created.body)]));
      for (const value of Object.values(values)) expect([name, value]).toEqual([name, expect.stringMatching(/\S/)]);
      const caller = fixture.by?.[link.operationId]?.() ?? actor;
      const body = target.method === 'PATCH' || target.method === 'PUT' ? (fixture.update?.[link.operationId] ?? {}) : undefined;
      const res = await api(t, target.method, fill(target.template, values).slice('/v1'.length), { token: caller.accessToken, body });
      // The target exists and is addressable: neither 404 nor 400, and nothing else refused either.
      expect([create, name, res.status, res.status < 300 ? null : res.body]).toEqual([create, name, expect.any(Number), null]);
    }
  });
});
