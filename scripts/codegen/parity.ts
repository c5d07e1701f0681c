/**
 * Parity: every REST operation with a GraphQL twin declares the same gate on both, and its domain
 * value serves the twin's result (generated/parity.ts); the contract test file runs one suite per
 * twin (test/contract/parity.generated.test.ts). The twins' fields agree both ways, request and
 * answer (field-parity.ts), and every stored resource's fields are columns of its table
 * (storage.ts): checkSpecAgreement runs both, after generated/tables.ts is built.
 */
import { getNamedType, isLeafType, type GraphQLSchema } from 'graphql';
import { BANNER, fail } from './common';
import { sameGate, type Gate } from './gates';
import type { OpenApiDoc, Route } from './openapi';
import { checkFieldParity } from './field-parity';
import { checkStorage } from './storage';
import { specSources } from './spec-sources';

/**
 * Twins whose GraphQL field answers an object: the REST binding's domain value (by its default
 * status) must be assignable to the GraphQL result, so one domain shape serves both protocols
 * and the two schemas cannot drift apart unnoticed (a compile error in generated/parity.ts).
 */
function twinShapeChecks(routes: Route[], schema: GraphQLSchema): string {
  const checks = routes
    .filter((r) => r.graphql && !r.ownGraphqlShape && r.envelope.kind !== 'raw')
    .filter((r) => {
      const [typeName, fieldName] = r.graphql!.split('.') as [string, string];
      const root = typeName === 'Query' ? schema.getQueryType() : schema.getMutationType();
      const field = root?.getFields()[fieldName];
      return field !== undefined && !isLeafType(getNamedType(field.type));
    })
    .map((r) => {
      const [typeName, fieldName] = r.graphql!.split('.') as [string, string];
      return `  Serves<${typeName}['${fieldName}'], DomainResults['${r.operationId}'][DefaultStatus['${r.operationId}']]>,`;
    });
  return `
/**
 * Compile-time: for every twin that answers an object, the domain value its REST binding returns
 * is a valid GraphQL result (\`x-graphql-shape: own\` opts an operation out).
 */
type Serves<GraphQLResult, Domain extends GraphQLResult> = Domain;
export type TwinShapes = [
${checks.join('\n')}
];
`;
}

export function parityModule(routes: Route[], gates: Record<string, Gate>, schema: GraphQLSchema): string {
  const sources = specSources();
  const moduleOf = (file: string) => /^spec\/(?:openapi|graphql)\/modules\/([^/.]+)/.exec(file)?.[1] ?? file;
  const twins = routes
    .filter((r) => r.graphql)
    .map((r) => {
      const field = gates[r.graphql!];
      if (!field) {
        // The module's own GraphQL part, where the twin goes (the REST operation's part names the module).
        const restFile = sources.pathFile(r.path);
        const [rootType, name] = r.graphql!.split('.');
        fail(`${restFile}: ${r.operationId} declares x-graphql ${r.graphql}, which spec/graphql/modules/${moduleOf(restFile)}.graphql does not define; add \`${name}\` to its \`extend type ${rootType}\` with the operation's @gate, or remove x-graphql`);
      } else if (!sameGate(r.gate, field)) {
        fail(`${r.operationId}: REST gate ${JSON.stringify(r.gate)} differs from ${r.graphql} gate ${JSON.stringify(field)}`);
      }
      return { operationId: r.operationId, method: r.method, path: r.path, graphql: r.graphql!, gate: r.gate };
    });
  const operationModules = Object.fromEntries(routes.map((r) => [r.operationId, moduleOf(sources.pathFile(r.path))]));
  const fieldModules: Record<string, string> = {};
  for (const rootType of [schema.getQueryType(), schema.getMutationType()]) {
    for (const field of Object.values(rootType?.getFields() ?? {})) fieldModules[`${rootType!.name}.${field.name}`] = moduleOf(sources.graphqlFile(field.astNode));
  }
  return `${BANNER}import type { Gate } from './gates';
import type { Mutation, Query } from './graphql';
import type { DefaultStatus, DomainResults, OperationId } from './rest';

/** Every REST operation with a GraphQL twin, and the gate both declare. Read by test/contract. */
export interface Twin {
  operationId: OperationId;
  method: 'get' | 'post' | 'put' | 'patch' | 'delete';
  path: string;
  graphql: string;
  gate: Gate;
}

export const twins: readonly Twin[] = ${JSON.stringify(twins, null, 2)};

/**
 * The module that declares each REST operation (its part spec/openapi/modules/<module>), whose
 * rest.ts binds it: how an unbound operation is reported (src/modules/bindings.ts).
 */
export const operationModules = ${JSON.stringify(operationModules, null, 2)} as const satisfies Record<OperationId, string>;
export type OperationModules = typeof operationModules;

/** The module that declares each Query and Mutation field (spec/graphql/modules/<module>.graphql), whose graphql.ts resolves it. */
export const graphqlFieldModules = ${JSON.stringify(fieldModules, null, 2)} as const;
export type GraphqlFieldModules = typeof graphqlFieldModules;
${twinShapeChecks(routes, schema)}`;
}

export function contractTests(routes: Route[]): string {
  const twins = routes.filter((r) => r.graphql);
  return `// DO NOT EDIT. Generated by scripts/codegen.ts from spec/; run \`npm run codegen\`.
// One suite per REST/GraphQL twin: the same failure gives the same code and message on both.
// One running service and one set of credentials serve every suite of this file.
import { twins } from '../../generated/parity';
import { describeTwinContract, useContractFixtures } from './harness';

const fixtures = useContractFixtures(twins);

const twin = (operationId: string) => {
  const found = twins.find((t) => t.operationId === operationId);
  if (!found) throw new Error(\`no twin \${operationId}\`);
  return found;
};

${twins.map((r) => `describeTwinContract(fixtures, twin('${r.operationId}'));`).join('\n')}
`;
}

/**
 * The checks across specs and storage: REST ↔ GraphQL fields of every twin (field-parity.ts) and
 * the stored resources' properties ↔ the columns of generated/tables.ts (storage.ts). Problems go
 * to the shared list, naming the spec file (or migration) to edit.
 */
export function checkSpecAgreement(openapi: OpenApiDoc, routes: Route[], schema: GraphQLSchema, tablesText: string): void {
  const sources = specSources();
  checkFieldParity(openapi, routes, schema, sources);
  checkStorage(openapi, tablesText, sources);
}
