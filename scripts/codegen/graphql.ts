/**
 * GraphQL (spec/graphql/, bundled by graphql-parts.ts): the @gate of every Query and Mutation field, and the generated
 * files generated/graphql-schema.ts (SDL and field gates) and generated/graphql.ts
 * (@graphql-codegen with the settings of codegen.yml).
 */
import { parse as parseYaml } from 'yaml';
import { codegen as graphqlCodegen } from '@graphql-codegen/core';
import * as typescriptPlugin from '@graphql-codegen/typescript';
import * as typescriptResolversPlugin from '@graphql-codegen/typescript-resolvers';
import {
  buildSchema,
  parse as parseGraphql,
  printSchema,
  type DirectiveNode,
  type GraphQLField,
  type GraphQLSchema,
  type ValueNode,
} from 'graphql';
import { BANNER, fail, readSpec } from './common';
import { bundleGraphql } from './graphql-parts';
import { normaliseGate, type Gate } from './gates';

function argValue(node: ValueNode): unknown {
  switch (node.kind) {
    case 'StringValue':
      return node.value;
    case 'ListValue':
      return node.values.map(argValue);
    case 'BooleanValue':
      return node.value;
    case 'NullValue':
      return null;
    default:
      fail(`@gate: unsupported argument kind ${node.kind}`);
      return null;
  }
}

function fieldGates(schema: GraphQLSchema): Record<string, Gate> {
  const gates: Record<string, Gate> = {};
  for (const rootType of [schema.getQueryType(), schema.getMutationType()]) {
    if (!rootType) continue;
    for (const field of Object.values(rootType.getFields()) as GraphQLField<unknown, unknown>[]) {
      const where = `${rootType.name}.${field.name}`;
      const directive = field.astNode?.directives?.find((d: DirectiveNode) => d.name.value === 'gate');
      if (!directive) {
        fail(`${where}: no @gate directive`);
        continue;
      }
      const args = Object.fromEntries((directive.arguments ?? []).map((a) => [a.name.value, argValue(a.value)]));
      const given = ['permission', 'anyPermission', 'allPermissions'].filter((k) => args[k] !== undefined);
      if (given.length > 1) fail(`${where}: use one of permission, anyPermission, allPermissions`);
      const permission =
        args.permission !== undefined
          ? args.permission
          : args.anyPermission !== undefined
            ? { any: args.anyPermission }
            : args.allPermissions !== undefined
              ? { all: args.allPermissions }
              : undefined;
      const gate = normaliseGate(where, args.auth, permission, args.feature, args.scope, {
        mutating: rootType === schema.getMutationType(),
        reason: args.reason,
        resourceGrant: args.resourceGrant,
        namesId: field.args.some((a) => a.name === 'id'),
      });
      if (gate) gates[where] = gate;
    }
  }
  return Object.fromEntries(Object.entries(gates).sort(([a], [b]) => a.localeCompare(b)));
}

export async function graphqlTypes(schema: GraphQLSchema): Promise<string> {
  const settings = parseYaml(readSpec('codegen.yml')) as {
    generates: Record<string, { plugins: string[]; config: Record<string, unknown> }>;
  };
  const target = settings.generates['generated/graphql.ts'];
  if (!target) throw new Error('codegen.yml must configure generated/graphql.ts');
  const plugins = { typescript: typescriptPlugin, 'typescript-resolvers': typescriptResolversPlugin };
  const output = await graphqlCodegen({
    filename: 'generated/graphql.ts',
    schema: parseGraphql(printSchema(schema)),
    schemaAst: schema,
    documents: [],
    config: target.config,
    plugins: target.plugins.map((name) => ({ [name]: {} })),
    pluginMap: plugins,
  });
  return `${BANNER}${output}`;
}

/** Bundles spec/graphql/ and checks every root field's gate; subscriptions are refused. */
export function readGraphql(): { sdl: string; schema: GraphQLSchema; gates: Record<string, Gate> } {
  const sdl = bundleGraphql();
  const schema = buildSchema(sdl);
  const gates = fieldGates(schema);
  if (schema.getSubscriptionType()) fail('GraphQL subscriptions are not offered: remove the Subscription type');
  return { sdl, schema, gates };
}

/** generated/graphql-schema.ts: the SDL as served, and the gate of every root field. */
export function graphqlSchemaModule(sdl: string, gates: Record<string, Gate>): string {
  return `${BANNER}import type { Gate } from './gates';

/** The SDL served at POST /v1/gql and downloaded from GET /v1/schema. */
export const typeDefs = ${JSON.stringify(sdl)};

/** The gate of every Query and Mutation field, read from @gate. */
export const fieldGates: Readonly<Record<string, Gate>> = ${JSON.stringify(gates, null, 2)};
`;
}
