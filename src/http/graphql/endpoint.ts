/**
 * GraphQL at POST /v1/gql (graphql-http over @graphql-tools/schema; queries and mutations only).
 * Every Query and Mutation resolver is wrapped with its generated gate, and every error leaves
 * with `extensions.code` equal to the REST code and the same message.
 */
import { GraphQLError, type GraphQLFieldResolver, type GraphQLFormattedError } from 'graphql';
import { makeExecutableSchema } from '@graphql-tools/schema';
import { createHandler } from 'graphql-http/lib/use/express';
import type { RequestHandler } from 'express';
import { fieldGates, typeDefs } from '../../../generated/graphql-schema';
import type { MutationResolvers, QueryResolvers } from '../../../generated/graphql';
import type { GateEnforcer } from '../../auth/gates';
import { errorBody, toAppError } from '../../errors';
import type { Logger } from '../../infra/logger';
import { requestContext } from '../context';
import type { GraphQLContext } from './context';

/** The root resolvers every module contributes to; a missing field is a compile error. */
export interface RootResolvers {
  Query: QueryResolvers<GraphQLContext>;
  Mutation: MutationResolvers<GraphQLContext>;
}

type AnyResolver = GraphQLFieldResolver<unknown, GraphQLContext>;

function gated(resolvers: RootResolvers, gates: GateEnforcer): Record<string, Record<string, AnyResolver>> {
  const out: Record<string, Record<string, AnyResolver>> = {};
  for (const [typeName, fields] of Object.entries(resolvers) as [string, Record<string, AnyResolver>][]) {
    out[typeName] = {};
    for (const [fieldName, resolve] of Object.entries(fields)) {
      const gate = fieldGates[`${typeName}.${fieldName}`];
      if (!gate) throw new Error(`no generated gate for ${typeName}.${fieldName}`);
      out[typeName]![fieldName] = async (parent, args, context, info) => {
        await gates.enforce(gate, context.auth);
        return resolve(parent, args, context, info);
      };
    }
  }
  return out;
}

/** Same code and message as REST for the same failure; 5xx scrubbed, cause logged. */
export function formatGraphQLError(error: GraphQLError, log: Logger): GraphQLFormattedError {
  const original = error.originalError;
  const located = { ...(error.locations ? { locations: error.locations } : {}), ...(error.path ? { path: error.path } : {}) };
  if (original && !(original instanceof GraphQLError)) {
    const appError = toAppError(original);
    if (appError.status >= 500) log.error({ err: original, code: appError.code }, 'graphql resolver failed');
    const body = errorBody(appError);
    return { message: body.message, ...located, extensions: { code: body.error, ...(body.details ? { details: body.details } : {}) } };
  }
  // Parse, validation and variable-coercion errors: the request, not the server, is at fault.
  const code = /^Variable "\$/.test(error.message) ? 'VALIDATION_ERROR' : 'BAD_REQUEST';
  return { message: error.message, ...located, extensions: { code } };
}

export function createGraphQLSchema(resolvers: RootResolvers, gates: GateEnforcer) {
  return makeExecutableSchema({ typeDefs, resolvers: gated(resolvers, gates) });
}

export function createGraphQLHandler(deps: { resolvers: RootResolvers; gates: GateEnforcer; log: Logger }): RequestHandler {
  const schema = createGraphQLSchema(deps.resolvers, deps.gates);
  return createHandler<GraphQLContext>({
    schema,
    context: (req) => requestContext(req.raw) as never,
    formatError: (error) => formatGraphQLError(error as GraphQLError, deps.log) as never,
  }) as unknown as RequestHandler;
}
