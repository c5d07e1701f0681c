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

export interface StatementOptions {
  /**
   * The statement changes nothing that a version counter (a hot read's guard) covers: it fires none
   * of the counters' triggers (src/auth/access-version.ts, the events module's event versions). On
   * the embedded store such a write leaves guarded kept reads in place (hot-read.ts, trackWrites),
   * as it leaves their counters on PostgreSQL; test/infra/hot-read.test.ts checks each such text.
   */
  bumpsNoGuard?: boolean;
}

export async function statement<Row>(knex: Knex, text: string, values: readonly unknown[], options: StatementOptions = {}): Promise<Row[]> {
  const name = nameOf(text);
  const result = (await knex.raw(text, values as Knex.RawBinding[]).options(options.bumpsNoGuard ? { name, bumpsNoGuard: true } : { name })) as { rows?: Row[] } | Row[];
  return Array.isArray(result) ? result : (result.rows ?? []);
}
