/**
 * Contract harness for REST/GraphQL twins (generated/parity.ts). For each twin it makes the same
 * failing call on both protocols over real HTTP and asserts the same code and message:
 * anonymous (any non-public gate), missing permission (a credential that passes the auth kind but
 * holds no grant), and feature off (the credential holds every permission; the flag is switched
 * off globally). Inputs are sampled from the specs, so a new twin needs no hand-written test.
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

type Schema = Record<string, unknown>;
const SAMPLE_UUID = '00000000-0000-4000-8000-000000000001';

function deref(node: unknown): Schema {
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

function restRequest(twin: Twin): { url: string; init: RequestInit } {
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

function graphqlOperation(twin: Twin): { query: string; variables: Record<string, unknown> } {
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

async function callBoth(t: TestApp, twin: Twin, headers: Record<string, string>): Promise<{ rest: Outcome; graphql: Outcome }> {
  const { url, init } = restRequest(twin);
  const res = await fetch(`${t.url}${url}`, { ...init, headers: { ...(init.headers as Record<string, string>), ...headers } });
  const body = (await res.json()) as { error?: string; message?: string };
  const { query, variables } = graphqlOperation(twin);
  const g = await gql(t.url, query, variables, headers);
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

/** Auth kinds a configured system key passes; the others need credentials of later modules. */
const SYSTEM_KEY_PASSES = new Set(['authenticated', 'system-key']);

export function describeTwinContract(twin: Twin): void {
  describe(`contract ${twin.operationId} ⇄ ${twin.graphql}`, () => {
    const withoutGrants = systemKey(`contract-none-${randomUUID()}`, []);
    const withGrants = systemKey(`contract-all-${randomUUID()}`, twin.gate.permissions?.list ?? []);
    let t: TestApp;

    beforeAll(async () => {
      t = await startTestApp({ auth: { system_keys: [withoutGrants.config, withGrants.config] } });
    });
    afterAll(async () => {
      await t?.stop();
    });

    if (twin.gate.auth !== 'public') {
      test('anonymous: UNAUTHORIZED with one message on both protocols', async () => {
        expectSameFailure(await callBoth(t, twin, {}), 'UNAUTHORIZED');
      });
    }

    const needsCredential = twin.gate.permissions !== null || twin.gate.feature !== null;
    if (needsCredential && !SYSTEM_KEY_PASSES.has(twin.gate.auth)) {
      test(`a credential passing auth kind "${twin.gate.auth}" is available to the harness`, () => {
        throw new Error(`extend test/contract/harness.ts with a credential for auth kind ${twin.gate.auth}`);
      });
      return;
    }

    if (twin.gate.permissions) {
      test('missing permission: FORBIDDEN with one message on both protocols', async () => {
        expectSameFailure(await callBoth(t, twin, { authorization: `Bearer ${withoutGrants.key}` }), 'FORBIDDEN');
      });
    }

    if (twin.gate.feature) {
      test('feature off: FEATURE_DISABLED with one message on both protocols', async () => {
        const features = t.app.modules.features.service;
        await features.setGlobal(twin.gate.feature!, false);
        try {
          expectSameFailure(await callBoth(t, twin, { authorization: `Bearer ${withGrants.key}` }), 'FEATURE_DISABLED');
        } finally {
          await features.setGlobal(twin.gate.feature!, true);
        }
      });
    }
  });
}
