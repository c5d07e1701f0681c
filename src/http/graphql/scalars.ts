/**
 * The schema's custom scalars. `UUID` refuses anything but an RFC 4122 string at coercion, so a
 * bad id is a VALIDATION_ERROR as on REST (the OpenAPI `format: uuid`), never a database error.
 * `JSON` stays graphql-tools' pass-through: opaque payloads are checked by the input guard.
 */
import { GraphQLError, GraphQLScalarType, Kind } from 'graphql';
import { UUID_RE } from '../../infra/ids';

function uuid(value: unknown): string {
  if (typeof value !== 'string' || !UUID_RE.test(value)) throw new GraphQLError('UUID cannot represent a value that is not a UUID string');
  return value;
}

export const UUIDScalar = new GraphQLScalarType({
  name: 'UUID',
  description: 'RFC 4122 UUID string.',
  serialize: (value) => value,
  parseValue: uuid,
  parseLiteral: (ast) => uuid(ast.kind === Kind.STRING ? ast.value : undefined),
});
