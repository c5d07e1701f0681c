/** The context every GraphQL resolver gets: the same AuthContext the REST handlers see. */
import type { RequestContext } from '../context';

export type GraphQLContext = RequestContext & Record<PropertyKey, unknown>;
