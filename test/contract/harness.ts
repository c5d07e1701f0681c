/**
 * Contract harness for REST/GraphQL twins (generated/parity.ts). For each twin it makes the same
 * failing call on both protocols over real HTTP and asserts the same code and message:
 * - anonymous (any non-public gate): UNAUTHORIZED;
 * - a credential of the wrong class (first-party, user and popout-session gates): popout, overlay,
 *   widget and extension tokens get FORBIDDEN (UNAUTHORIZED on `user` gates), a user session on a
 *   popout-session or extension gate gets FORBIDDEN;
 * - missing permission (a credential that passes the auth kind but holds none of the grants);
 * - feature off (the credential holds every permission; the flag is switched off globally).
 * Inputs are sampled from the specs, so a new twin needs no hand-written test. Credentials are
 * made through the real API: development logins, an invite into an account with an empty role,
 * a popout token; overlay, widget and extension tokens are minted in the credential store (their
 * modules issue them later).
 */
import { randomUUID } from 'node:crypto';
import {
  buildSchema,
  getNamedType,
  getNullableType,
  isEnumType,
  isInputObjectType,
  isListType,
  isNonNullType,
  isObjectType,
  isScalarType,
  type GraphQLInputType,
} from 'graphql';
import { openapiDocument } from '../../generated/openapi-document';
import { typeDefs } from '../../generated/graphql-schema';
import type { Twin } from '../../generated/parity';
import { errorStatus, type ErrorCode } from '../../src/errors';
import { gql, startTestApp, systemKey, type TestApp } from '../helpers/app';
import { devLogin, joinAccount, type LoggedIn } from '../helpers/users';

type Schema = Record<string, unknown>;
const SAMPLE_UUID = '00000000-0000-4000-8000-000000000001';

/** The schema a `$ref` chain in the OpenAPI document ends at. */
export function deref(node: unknown): Schema {
  let current = node as Schema;
  while (current && typeof current.$ref === 'string') {
    current = (current.$ref as string)
      .replace(/^#\//, '')
      .split('/')
      .reduce<unknown>((acc, key) => (acc as Schema)[key], openapiDocument) as Schema;
  }
  return current;
}

/** A minimal value that satisfies a JSON Schema, so request validation passes and gates decide. */
export function sampleFromSchema(node: unknown): unknown {
  const schema = deref(node);
  if (!schema) return null;
  if (schema.example !== undefined) return schema.example;
  if (Array.isArray(schema.enum)) return schema.enum[0];
  if (Array.isArray(schema.oneOf)) return sampleFromSchema(schema.oneOf[0]);
  if (Array.isArray(schema.anyOf)) return sampleFromSchema(schema.anyOf[0]);
  if (Array.isArray(schema.allOf)) return Object.assign({}, ...schema.allOf.map((s) => sampleFromSchema(s) as object));
  switch (schema.type) {
    case 'object': {
      const props = (schema.properties ?? {}) as Record<string, unknown>;
      return Object.fromEntries(((schema.required as string[]) ?? []).map((k) => [k, sampleFromSchema(props[k])]));
    }
    case 'array':
      return Array.from({ length: Number(schema.minItems ?? 0) }, () => sampleFromSchema(schema.items));
    case 'integer':
    case 'number':
      return Number(schema.minimum ?? 1);
    case 'boolean':
      return false;
    case 'string':
      switch (schema.format) {
        case 'uuid':
          return SAMPLE_UUID;
        case 'date-time':
          return new Date(Date.now() + 86_400_000).toISOString();
        case 'email':
          return 'contract@example.com';
        case 'uri':
          return 'https://example.com/';
        default:
          return 'x'.repeat(Math.max(1, Number(schema.minLength ?? 1)));
      }
    default:
      return null;
  }
}

/** A request to an operation with sampled parameters and body: validation passes, so the gate (or the handler) decides. */
export function restRequestFor(route: Pick<Twin, 'path' | 'method'>): { url: string; init: RequestInit } {
  return restRequest(route);
}

function restRequest(twin: Pick<Twin, 'path' | 'method'>): { url: string; init: RequestInit } {
  const paths = openapiDocument.paths as Record<string, Record<string, Schema>>;
  const op = paths[twin.path.replace(/^\/v1/, '')]![twin.method]!;
  const parameters = ((op.parameters as unknown[]) ?? []).map(deref);
  let path = twin.path;
  const query = new URLSearchParams();
  for (const p of parameters) {
    const value = String(sampleFromSchema(p.schema));
    if (p.in === 'path') path = path.replace(`{${String(p.name)}}`, encodeURIComponent(value));
    if (p.in === 'query' && p.required) query.set(String(p.name), value);
  }
  const body = deref(op.requestBody) as Schema | undefined;
  const json = (body?.content as Record<string, Schema> | undefined)?.['application/json'];
  const suffix = query.size ? `?${query.toString()}` : '';
  return {
    url: `${path}${suffix}`,
    init: {
      method: twin.method.toUpperCase(),
      headers: json ? { 'content-type': 'application/json' } : {},
      ...(json ? { body: JSON.stringify(sampleFromSchema(json.schema)) } : {}),
    },
  };
}

const gqlSchema = buildSchema(typeDefs);

function sampleInput(type: GraphQLInputType): unknown {
  const inner = getNullableType(type);
  if (isListType(inner)) return [];
  if (isEnumType(inner)) return inner.getValues()[0]!.value;
  if (isInputObjectType(inner)) {
    return Object.fromEntries(
      Object.values(inner.getFields())
        .filter((f) => isNonNullType(f.type) && f.defaultValue === undefined)
        .map((f) => [f.name, sampleInput(f.type)]),
    );
  }
  if (isScalarType(inner)) {
    switch (inner.name) {
      case 'Int':
      case 'Float':
        return 1;
      case 'Boolean':
        return false;
      case 'UUID':
      case 'ID':
        return SAMPLE_UUID;
      case 'JSON':
        return {};
      default:
        return 'x';
    }
  }
  return null;
}

/** A document calling one root field (`Query.events`) with sampled required arguments. */
export function graphqlOperationFor(field: string): { query: string; variables: Record<string, unknown> } {
  return graphqlOperation({ graphql: field });
}

function graphqlOperation(twin: Pick<Twin, 'graphql'>): { query: string; variables: Record<string, unknown> } {
  const [typeName, fieldName] = twin.graphql.split('.') as [string, string];
  const root = typeName === 'Query' ? gqlSchema.getQueryType() : gqlSchema.getMutationType();
  const field = root!.getFields()[fieldName]!;
  const args = field.args.filter((a) => isNonNullType(a.type) && a.defaultValue === undefined);
  const declarations = args.map((a) => `$${a.name}: ${String(a.type)}`).join(', ');
  const call = args.length ? `(${args.map((a) => `${a.name}: $${a.name}`).join(', ')})` : '';
  const selection = isObjectType(getNamedType(field.type)) ? ' { __typename }' : '';
  const keyword = typeName === 'Query' ? 'query' : 'mutation';
  return {
    query: `${keyword} Contract${declarations ? `(${declarations})` : ''} { ${fieldName}${call}${selection} }`,
    variables: Object.fromEntries(args.map((a) => [a.name, sampleInput(a.type)])),
  };
}

interface Outcome {
  status: number;
  code: string | undefined;
  message: string | undefined;
}

/** How a credential travels: the Authorization header, or `?token=` (popout tokens). */
interface Credential {
  header?: string;
  query?: string;
}

function withQuery(url: string, token: string | undefined): string {
  if (!token) return url;
  return `${url}${url.includes('?') ? '&' : '?'}token=${encodeURIComponent(token)}`;
}

async function callBoth(t: TestApp, twin: Twin, credential: Credential): Promise<{ rest: Outcome; graphql: Outcome }> {
  const headers: Record<string, string> = credential.header ? { authorization: `Bearer ${credential.header}` } : {};
  const { url, init } = restRequest(twin);
  const res = await fetch(withQuery(`${t.url}${url}`, credential.query), { ...init, headers: { ...(init.headers as Record<string, string>), ...headers } });
  const body = (await res.json()) as { error?: string; message?: string };
  const { query, variables } = graphqlOperation(twin);
  const g = await gql(t.url, query, variables, headers, credential.query);
  const first = g.body.errors?.[0];
  return {
    rest: { status: res.status, code: body.error, message: body.message },
    graphql: { status: g.status, code: first?.extensions?.code, message: first?.message },
  };
}

function expectSameFailure(outcome: { rest: Outcome; graphql: Outcome }, code: ErrorCode): void {
  expect(outcome.rest.code).toBe(code);
  expect(outcome.rest.status).toBe(errorStatus[code]);
  expect(outcome.graphql.code).toBe(code);
  expect(outcome.graphql.message).toBe(outcome.rest.message);
}

export interface ContractFixtures {
  readonly t: TestApp;
  /** A credential passing `auth` that holds none (`false`) or all (`true`) of the twins' grants. */
  credential(auth: Twin['gate']['auth'], grants: boolean): Credential;
  /** Credentials of the classes the first-party gate refuses. */
  readonly boundTokens: Record<'popout' | 'overlay' | 'widget' | 'extension', Credential>;
  readonly userSession: Credential;
}

/**
 * Starts one service for the whole generated file and makes its credentials: system keys with
 * none and with every twin permission; an owner session (every account permission, plus the
 * super-admin role) and a member session whose role holds nothing; bound tokens.
 */
export function useContractFixtures(twins: readonly Twin[]): ContractFixtures {
  const everyGrant = [...new Set(twins.flatMap((tw) => tw.gate.permissions?.list ?? []))];
  const withoutGrants = systemKey(`contract-none-${randomUUID()}`, []);
  const withGrants = systemKey(`contract-all-${randomUUID()}`, everyGrant);
  let state: { t: TestApp; owner: LoggedIn; limited: LoggedIn; bound: ContractFixtures['boundTokens'] } | undefined;

  beforeAll(async () => {
    const t = await startTestApp({ auth: { system_keys: [withoutGrants.config, withGrants.config] }, rate_limits: { enabled: false } });
    try {
      const first = await devLogin(t, `owner-${randomUUID()}@contract.test`);
      await t.app.modules.accounts.assignAdminRole(first.userId, 'super-admin');
      const owner = await devLogin(t, first.email); // a new session whose claims include the admin role
      const limited = await devLogin(t, `limited-${randomUUID()}@contract.test`);
      const joined = await joinAccount(t, owner, limited, { roleName: `nothing-${randomUUID().slice(0, 8)}`, permissions: [] });
      const accountId = owner.accountId!;
      const store = t.app.authStore;
      const popout = await store.mint({ kind: 'popout', accountId, userId: owner.userId, createdBy: owner.userId, permissions: ['events:read'] });
      const overlay = await store.mint({ kind: 'overlay', accountId, subjectId: randomUUID() });
      const widget = await store.mint({ kind: 'widget', accountId, subjectId: randomUUID() });
      const extension = await store.mint({ kind: 'extension', accountId, subjectId: randomUUID(), extensionId: randomUUID(), expiresAt: new Date(Date.now() + 900_000) });
      state = {
        t,
        owner,
        limited: joined,
        bound: { popout: { query: popout.token }, overlay: { header: overlay.token }, widget: { header: widget.token }, extension: { header: extension.token } },
      };
    } catch (error) {
      await t.stop();
      throw error;
    }
  });
  afterAll(async () => {
    await state?.t.stop();
  });

  const ready = () => {
    if (!state) throw new Error('contract fixtures are used before beforeAll made them');
    return state;
  };
  return {
    get t() {
      return ready().t;
    },
    get boundTokens() {
      return ready().bound;
    },
    get userSession() {
      return { header: ready().owner.accessToken };
    },
    credential(auth, grants) {
      const s = ready();
      switch (auth) {
        case 'authenticated':
        case 'system-key':
          return { header: grants ? withGrants.key : withoutGrants.key };
        case 'first-party':
        case 'user':
          return { header: grants ? s.owner.accessToken : s.limited.accessToken };
        case 'public':
          // A public operation's feature gate holds for everyone: the anonymous caller drives it.
          return {};
        case 'extension':
          // The gate admits an extension token alone and names no permission: the bound token drives it.
          return s.bound.extension;
        default:
          throw new Error(`extend test/contract/harness.ts with a credential for auth kind ${auth}`);
      }
    },
  };
}

/** Auth kinds whose permission and feature gates the harness can drive. */
const SERVED = new Set(['authenticated', 'system-key', 'first-party', 'user', 'public', 'extension']);

export function describeTwinContract(fixtures: ContractFixtures, twin: Twin): void {
  describe(`contract ${twin.operationId} ⇄ ${twin.graphql}`, () => {
    if (twin.gate.auth !== 'public') {
      test('anonymous: UNAUTHORIZED with one message on both protocols', async () => {
        expectSameFailure(await callBoth(fixtures.t, twin, {}), 'UNAUTHORIZED');
      });
    }

    if (twin.gate.auth === 'first-party' || twin.gate.auth === 'user') {
      const refused: ErrorCode = twin.gate.auth === 'user' ? 'UNAUTHORIZED' : 'FORBIDDEN';
      for (const kind of ['popout', 'overlay', 'widget', 'extension'] as const) {
        test(`${kind} token: ${refused} with one message on both protocols`, async () => {
          expectSameFailure(await callBoth(fixtures.t, twin, fixtures.boundTokens[kind]), refused);
        });
      }
    }

    if (twin.gate.auth === 'popout-session' || twin.gate.auth === 'extension') {
      test('a user session: FORBIDDEN with one message on both protocols', async () => {
        expectSameFailure(await callBoth(fixtures.t, twin, fixtures.userSession), 'FORBIDDEN');
      });
    }

    const needsCredential = twin.gate.permissions !== null || twin.gate.feature !== null;
    if (needsCredential && !SERVED.has(twin.gate.auth)) {
      test(`a credential passing auth kind "${twin.gate.auth}" is available to the harness`, () => {
        throw new Error(`extend test/contract/harness.ts with a credential for auth kind ${twin.gate.auth}`);
      });
      return;
    }

    if (twin.gate.permissions) {
      test('missing permission: FORBIDDEN with one message on both protocols', async () => {
        expectSameFailure(await callBoth(fixtures.t, twin, fixtures.credential(twin.gate.auth, false)), 'FORBIDDEN');
      });
    }

    if (twin.gate.feature) {
      test('feature off: FEATURE_DISABLED with one message on both protocols', async () => {
        const features = fixtures.t.app.modules.features;
        await features.setGlobal(twin.gate.feature!, false);
        try {
          expectSameFailure(await callBoth(fixtures.t, twin, fixtures.credential(twin.gate.auth, true)), 'FEATURE_DISABLED');
        } finally {
          await features.setGlobal(twin.gate.feature!, true);
        }
      });
    }
  });
}
