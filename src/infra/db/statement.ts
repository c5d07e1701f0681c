/**
 * One SQL statement with `?` placeholders, answered as its rows. On PostgreSQL the statement is
 * named after its text, so each connection parses and plans a text once and then only binds and
 * executes it (texts come from code, never from input: their number is bounded). On PGlite the
 * name does the same (pglite-client.ts): the text is parsed and described once per database.
 */
import { createHash } from 'node:crypto';
import type { Knex } from 'knex';

const names = new Map<string, string>();

function nameOf(text: string): string {
  let name = names.get(text);
  if (!name) names.set(text, (name = `s_${createHash('sha256').update(text).digest('hex').slice(0, 20)}`));
  return name;
}

export async function statement<Row>(knex: Knex, text: string, values: readonly unknown[]): Promise<Row[]> {
  const result = (await knex.raw(text, values as Knex.RawBinding[]).options({ name: nameOf(text) })) as { rows?: Row[] } | Row[];
  return Array.isArray(result) ? result : (result.rows ?? []);
}
