/**
 * The authorization matrix: every operation of the route table (generated/rest.ts) and every
 * GraphQL root field (generated/graphql-schema.ts), against every credential kind the service
 * knows, each made through the real API where one exists. The expected answer of each cell is
 * derived here from the operation's declared gate and Part 1's rules for each credential kind
 * (which token classes pass each auth kind; what each kind holds: a role's table, a key's scopes
 * less the deny-list, an extension token its install's grants in account scope, another bound
 * token's nothing), not from the gate engine, so a cell fails when the
 * service lets through a credential its gate refuses, refuses one it declares allowed with a gate
 * refusal, or answers a REST operation and its GraphQL twin differently.
 *
 * An allowed cell is only checked not to be a gate refusal: the call may still fail on its sampled
 * input (400, 404, 409). Calls that would end a fixture (dissolving the account, leaving it) are
 * checked on refusals only; their allowed cells have their own tests (accounts suites).
 */
import { randomUUID } from 'node:crypto';
import { fieldGates } from '../../generated/graphql-schema';
import type { Gate } from '../../generated/gates';
import { routes, type RouteSpec } from '../../generated/rest';
import { accountPermissionCategories, accountPermissions, adminPermissions, apiKeyDenyList, defaultAccountRoles, userPermissions } from '../../src/auth/registry';
import { messages } from '../../src/errors';
import { gql, startTestApp, systemKey, type TestApp } from '../helpers/app';
import { api, devLogin, joinAccount, type LoggedIn } from '../helpers/users';
import { graphqlOperationFor, restRequestFor } from './harness';

/** The credential kinds of the matrix, in the order the report lists them. */
export const CREDENTIAL_KINDS = [
  'anonymous',
  'owner session',
  'administrator session',
  'moderator session',
  'viewer session',
  'personal key, one unrelated scope',
  'personal key, every assignable scope',
  'service key',
  'popout session',
  'overlay token',
  'shared overlay token',
  'widget token',
  'extension token',
  'developer key',
  'system key',
] as const;
export type CredentialKind = (typeof CREDENTIAL_KINDS)[number];

type TokenClass = 'anonymous' | 'session' | 'user_key' | 'service_key' | 'popout' | 'bound' | 'extension' | 'developer_key' | 'system_key';

/** What Part 1 says a credential of each kind is and holds, independent of the gate engine. */
interface Holder {
  class: TokenClass;
  account: ReadonlySet<string>;
  admin: ReadonlySet<string>;
  user: ReadonlySet<string>;
}

const roleOf = (name: string) => new Set(defaultAccountRoles.find((r) => r.name === name)!.permissions);
const withoutDenied = (list: readonly string[]) => new Set(list.filter((p) => !apiKeyDenyList.includes(p)));
const none: ReadonlySet<string> = new Set();
/** The permissions the extension token's install granted (Part 1: its capability, in account scope). */
export const EXTENSION_GRANTS = ['events:read'];
/** The popout token's subset of its creator's grants. */
export const POPOUT_GRANTS = ['events:read', 'sounds:read'];
/** The one scope of the narrow key: a permission no operation's gate asks for alone. */
export const UNRELATED_SCOPE = 'rewards:read';
const developerScopes = accountPermissions.filter((p) => p.startsWith('extension-dev:'));
/** The system key holds every family as `resource:*` (Part 1 key rule 6: system keys only). */
export const SYSTEM_KEY_GRANTS = [
  ...new Set([...accountPermissionCategories.map((c) => `${c.category}:*`), ...[...adminPermissions, ...userPermissions].map((p) => `${p.slice(0, p.indexOf(':'))}:*`)]),
];

export const HOLDERS: Record<CredentialKind, Holder> = {
  anonymous: { class: 'anonymous', account: none, admin: none, user: none },
  'owner session': { class: 'session', account: roleOf('owner'), admin: none, user: new Set(userPermissions) },
  'administrator session': { class: 'session', account: roleOf('administrator'), admin: none, user: new Set(userPermissions) },
  'moderator session': { class: 'session', account: roleOf('moderator'), admin: none, user: new Set(userPermissions) },
  'viewer session': { class: 'session', account: roleOf('viewer'), admin: none, user: new Set(userPermissions) },
  'personal key, one unrelated scope': { class: 'user_key', account: new Set([UNRELATED_SCOPE]), admin: none, user: none },
  'personal key, every assignable scope': { class: 'user_key', account: withoutDenied(accountPermissions), admin: none, user: new Set(userPermissions) },
  'service key': { class: 'service_key', account: withoutDenied(accountPermissions), admin: none, user: none },
  'popout session': { class: 'popout', account: new Set(POPOUT_GRANTS), admin: none, user: none },
  'overlay token': { class: 'bound', account: none, admin: none, user: none },
  'shared overlay token': { class: 'bound', account: none, admin: none, user: none },
  'widget token': { class: 'bound', account: none, admin: none, user: none },
  'extension token': { class: 'extension', account: new Set(EXTENSION_GRANTS), admin: none, user: none },
  'developer key': { class: 'developer_key', account: new Set(developerScopes), admin: none, user: none },
  'system key': { class: 'system_key', account: none, admin: none, user: none },
};

export type Expected = { kind: 'refused'; status: 401 | 403; code: 'UNAUTHORIZED' | 'FORBIDDEN'; message: string } | { kind: 'allowed' };

const unauthorized = (message: string = messages.authenticationRequired): Expected => ({ kind: 'refused', status: 401, code: 'UNAUTHORIZED', message });
const forbidden = (message: string): Expected => ({ kind: 'refused', status: 403, code: 'FORBIDDEN', message });
const firstParty = (h: Holder) => h.class === 'session' || h.class === 'user_key';

/** Part 1: a system key holds a literal string or its `resource:*`; other holders the literal string only. */
function holds(h: Holder, scope: 'account' | 'admin' | 'user', permission: string): boolean {
  // User-scope checks accept a user session or a personal API key carrying the scope.
  if (scope === 'user' && h.class !== 'session' && h.class !== 'user_key') return false;
  if (h.class === 'system_key') return SYSTEM_KEY_GRANTS.includes(permission) || SYSTEM_KEY_GRANTS.includes(`${permission.slice(0, permission.indexOf(':'))}:*`);
  if (scope === 'admin') return h.admin.has(permission);
  if (scope === 'user') return h.class !== 'service_key' && h.user.has(permission);
  return h.account.has(permission);
}

/** The answer Part 1 gives `kind` on an operation with `gate`: auth kind first, then permission (every feature is on). */
export function expectedAnswer(gate: Gate, kind: CredentialKind): Expected {
  const h = HOLDERS[kind];
  if (gate.auth === 'public') return { kind: 'allowed' };
  if (h.class === 'anonymous') return unauthorized();
  switch (gate.auth) {
    case 'user':
      if (!firstParty(h)) return unauthorized();
      break;
    case 'first-party':
      if (!firstParty(h)) return forbidden(messages.firstPartyOnly);
      break;
    case 'system-key':
      if (h.class !== 'system_key') return forbidden(messages.systemKeyOnly);
      break;
    case 'popout-session':
      if (h.class !== 'popout') return forbidden(messages.popoutSessionOnly);
      break;
    case 'developer':
      if (h.class !== 'developer_key' && !firstParty(h)) return forbidden(messages.developerOnly);
      break;
    case 'extension':
      if (h.class !== 'extension') return forbidden(messages.extensionTokenOnly);
      break;
    case 'authenticated':
      break;
  }
  const required = gate.permissions;
  if (!required) return { kind: 'allowed' };
  const held = (p: string) => holds(h, required.scope, p);
  if (required.mode === 'any') return required.list.some(held) ? { kind: 'allowed' } : forbidden(messages.missingPermission(required.list[0]!));
  const missing = required.list.find((p) => !held(p));
  return missing ? forbidden(messages.missingPermission(missing)) : { kind: 'allowed' };
}

/**
 * Refusals an allowed cell may still meet, each a check of data the gate cannot see, by operation:
 * the ideas board's edits and deletions need a user-scope permission on one's own item or an
 * admin-scope one on anyone's (two scopes; their gates name the reason), and the developer surface
 * needs an approved developer (the `developer` auth kind admits any first-party caller, whose
 * approval the developer service checks).
 */
const DATA_CHECKS: Record<string, readonly string[]> = {
  deleteIdea: [messages.missingPermission('ideas:delete')],
  updateIdea: [messages.missingPermission('ideas:edit')],
  deleteIdeaComment: [messages.missingPermission('ideas:comment_delete')],
};

/** The refusals a gate gives: an allowed cell must never answer one of these. */
function isGateRefusal(operation: string, holder: Holder, code: string | undefined, message: string | undefined): boolean {
  if (message !== undefined && DATA_CHECKS[operation]?.includes(message)) return false;
  if (code === 'UNAUTHORIZED') {
    // A system or developer key acts in no account and as no user: an operation that needs either
    // answers so itself (its gate admits any authenticated caller).
    if (holder.class === 'system_key' || holder.class === 'developer_key') return false;
    return message === messages.authenticationRequired || message === messages.noActiveAccount;
  }
  if (code === 'FEATURE_DISABLED') return true;
  if (code !== 'FORBIDDEN' || message === undefined) return false;
  if (message === messages.developerOnly && firstParty(holder)) return false;
  return (
    message.startsWith('Missing permission: ') ||
    ([messages.firstPartyOnly, messages.systemKeyOnly, messages.popoutSessionOnly, messages.developerOnly, messages.extensionTokenOnly] as string[]).includes(message)
  );
}

/** Operations whose allowed cells would end a fixture the other cells need. */
const ENDS_A_FIXTURE = new Set(['dissolveAccount', 'leaveAccount']);

interface Credential {
  header?: string;
}

export interface MatrixFixture {
  t: TestApp;
  credentials: Record<CredentialKind, Credential>;
}

/** Starts one service and makes one credential of each kind, through the API where one exists. */
export async function startMatrix(): Promise<MatrixFixture> {
  const system = systemKey(`matrix-${randomUUID()}`, SYSTEM_KEY_GRANTS);
  const t = await startTestApp({ auth: { system_keys: [system.config] }, rate_limits: { enabled: false } });
  try {
    const owner = await devLogin(t, `matrix-owner-${randomUUID()}@matrix.test`);
    const member = async (role: string): Promise<LoggedIn> => joinAccount(t, owner, await devLogin(t, `matrix-${role}-${randomUUID()}@matrix.test`), { role });
    const [administrator, moderator, viewer] = [await member('administrator'), await member('moderator'), await member('viewer')];
    const key = async (path: string, permissions: readonly string[]): Promise<string> => {
      const made = await api(t, 'POST', path, { token: owner.accessToken, body: { label: `matrix-${randomUUID().slice(0, 8)}`, permissions } });
      if (made.status !== 201) throw new Error(`${path}: ${made.status} ${JSON.stringify(made.body)}`);
      return (made.body.data as { key: string }).key;
    };
    const assignable = async (kind: string) => ((await api(t, 'GET', `/api-keys/permissions?kind=${kind}`, { token: owner.accessToken })).body.data as { key: string }[]).map((p) => p.key);
    const store = t.app.authStore;
    const accountId = owner.accountId!;
    const popout = await store.mint({ kind: 'popout', accountId, userId: owner.userId, createdBy: owner.userId, permissions: POPOUT_GRANTS });
    const exchanged = await api(t, 'POST', '/auth/popout/exchange', { body: { token: popout.token } });
    if (exchanged.status !== 200) throw new Error(`popout exchange: ${exchanged.status} ${JSON.stringify(exchanged.body)}`);
    const mint = async (input: Parameters<typeof store.mint>[0]) => (await store.mint(input)).token;
    const credentials: Record<CredentialKind, Credential> = {
      anonymous: {},
      'owner session': { header: owner.accessToken },
      'administrator session': { header: administrator.accessToken },
      'moderator session': { header: moderator.accessToken },
      'viewer session': { header: viewer.accessToken },
      'personal key, one unrelated scope': { header: await key('/api-keys', [UNRELATED_SCOPE]) },
      'personal key, every assignable scope': { header: await key('/api-keys', await assignable('personal')) },
      'service key': { header: await key('/service-keys', await assignable('service')) },
      'popout session': { header: (exchanged.body.data as { token: string }).token },
      'overlay token': { header: await mint({ kind: 'overlay', accountId, subjectId: randomUUID() }) },
      'shared overlay token': { header: await mint({ kind: 'shared_overlay', accountId, subjectId: randomUUID(), expiresAt: new Date(Date.now() + 3_600_000) }) },
      'widget token': { header: await mint({ kind: 'widget', accountId, subjectId: randomUUID() }) },
      'extension token': { header: await mint({ kind: 'extension', accountId, subjectId: randomUUID(), extensionId: randomUUID(), expiresAt: new Date(Date.now() + 3_600_000), permissions: EXTENSION_GRANTS }) },
      'developer key': { header: await mint({ kind: 'developer_api_key', userId: owner.userId, subjectId: randomUUID(), permissions: developerScopes }) },
      'system key': { header: system.key },
    };
    return { t, credentials };
  } catch (error) {
    await t.stop();
    throw error;
  }
}

interface Answer {
  status: number;
  code: string | undefined;
  message: string | undefined;
}

async function callRest(f: MatrixFixture, route: RouteSpec, credential: Credential): Promise<Answer> {
  const { url, init } = restRequestFor(route);
  const headers: Record<string, string> = { ...(init.headers as Record<string, string>), ...(credential.header ? { authorization: `Bearer ${credential.header}` } : {}) };
  const res = await fetch(`${f.t.url}${url}`, { ...init, headers, redirect: 'manual' });
  const text = await res.text();
  let body: { error?: string; message?: string } = {};
  try {
    body = JSON.parse(text) as typeof body;
  } catch {
    // A non-JSON answer (audio, a redirect, text) is no gate refusal.
  }
  return { status: res.status, code: body.error, message: body.message };
}

async function callGraphql(f: MatrixFixture, field: string, credential: Credential): Promise<Answer> {
  const { query, variables } = graphqlOperationFor(field);
  const res = await gql(f.t.url, query, variables, credential.header ? { authorization: `Bearer ${credential.header}` } : {});
  const first = res.body.errors?.[0];
  return { status: res.status, code: first?.extensions?.code, message: first?.message };
}

/** One cell's disagreement with the declared gate, worded for the report; null when it agrees. */
function disagreement(operation: string, holder: Holder, expected: Expected, answer: Answer): string | null {
  if (expected.kind === 'refused') {
    if (answer.code === expected.code && answer.message === expected.message && (answer.status === expected.status || answer.status === 200)) return null;
    return `expected ${expected.status} ${expected.code} "${expected.message}", got ${answer.status} ${answer.code ?? '-'} "${answer.message ?? ''}"`;
  }
  // 503: a dependency the sampled call needs (a platform's API) is not there in this test; not the gate's concern.
  if (answer.status >= 500 && answer.status !== 503) return `expected an answer past the gate, got ${answer.status} ${answer.code ?? ''} "${answer.message ?? ''}"`;
  return isGateRefusal(operation, holder, answer.code, answer.message) ? `allowed by its gate, refused with ${answer.status} ${answer.code} "${answer.message}"` : null;
}

/** Every cell of one REST operation (and its GraphQL twin): the disagreements found. */
export async function checkRoute(f: MatrixFixture, route: RouteSpec): Promise<string[]> {
  const found: string[] = [];
  for (const kind of CREDENTIAL_KINDS) {
    const expected = expectedAnswer(route.gate, kind);
    if (expected.kind === 'allowed' && ENDS_A_FIXTURE.has(route.operationId)) continue;
    const rest = await callRest(f, route, f.credentials[kind]);
    const restProblem = disagreement(route.operationId, HOLDERS[kind], expected, rest);
    if (restProblem) found.push(`${kind}: REST ${restProblem}`);
    if (route.graphql === null) continue;
    const graphql = await callGraphql(f, route.graphql, f.credentials[kind]);
    const graphqlProblem = disagreement(route.operationId, HOLDERS[kind], expected, { ...graphql, status: graphql.status === 200 && expected.kind === 'refused' ? expected.status : graphql.status });
    if (graphqlProblem) found.push(`${kind}: GraphQL ${graphqlProblem}`);
    // Same failure, same answer: a refusal reads the same on both protocols.
    if (expected.kind === 'refused' && (graphql.code !== rest.code || graphql.message !== rest.message)) {
      found.push(`${kind}: REST answered ${rest.code} "${rest.message}", GraphQL ${graphql.code} "${graphql.message}"`);
    }
  }
  return found;
}

/** Every cell of a GraphQL root field that has no REST twin. */
export async function checkField(f: MatrixFixture, field: string): Promise<string[]> {
  const found: string[] = [];
  const gate = fieldGates[field as keyof typeof fieldGates] as Gate;
  for (const kind of CREDENTIAL_KINDS) {
    const expected = expectedAnswer(gate, kind);
    const answer = await callGraphql(f, field, f.credentials[kind]);
    const problem = disagreement(field, HOLDERS[kind], expected, { ...answer, status: answer.status === 200 && expected.kind === 'refused' ? expected.status : answer.status });
    if (problem) found.push(`${kind}: GraphQL ${problem}`);
  }
  return found;
}

/** GraphQL root fields without a REST twin, which the REST rows do not reach. */
export const graphqlOnlyFields: string[] = Object.keys(fieldGates)
  .filter((field) => !routes.some((r) => r.graphql === field))
  .sort();
