/**
 * An id as the API takes it (in a path, a body or a query): a UUID, any case. A value that is not
 * one is answered as an unknown resource before it reaches a uuid column, where PostgreSQL would
 * refuse the whole statement.
 */
export const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
