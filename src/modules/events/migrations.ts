/**
 * The events table (Part 2, "Event row") and the indexes that serve `GET /v1/events` filters on
 * PostgreSQL: newest first per account, by type, by platform, by `raw ->> 'user_id'`, and a
 * trigram index on `raw::text` for the case-insensitive search (when pg_trgm is available; the
 * embedded PGlite has no contrib extensions, so it scans there).
 *
 * `event_counts` keeps the number of visible rows per account, UTC day, type and platform, so the
 * exact `_meta.total` of a page filtered by types, platform and time needs no count over the rows
 * themselves (a million rows took 60–70 ms to count; repo.ts `total`). Statement-level triggers on
 * `events` keep it in step with every write (emit, gift hold and release, retention, cascades)
 * inside the writing transaction.
 */
import type { Knex } from 'knex';
import type { Migration } from '../../infra/db/database';

export const eventMigrations: readonly Migration[] = [
  {
    name: '20261123080500_create_events',
    async up(knex: Knex) {
      await knex.schema.createTable('events', (t) => {
        t.uuid('id').primary();
        t.uuid('account_id').notNullable().references('accounts.id').onDelete('CASCADE');
        t.string('type', 100).notNullable();
        t.string('platform', 50).notNullable();
        t.string('external_id', 255).nullable();
        t.jsonb('raw').notNullable();
        /** Individual community gift rows: stored, hidden from the history (Part 2, "Community gift bundling"). */
        t.boolean('hidden').notNullable().defaultTo(false);
        t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
        // Redelivery of one external id per account is idempotent (NULLs never conflict).
        t.unique(['account_id', 'external_id'], { indexName: 'events_account_external_unique' });
      });
      await knex.raw('create index events_account_created_idx on events (account_id, created_at desc, id desc)');
      await knex.raw('create index events_account_type_created_idx on events (account_id, type, created_at desc)');
      await knex.raw('create index events_account_platform_created_idx on events (account_id, platform, created_at desc)');
      await knex.raw("create index events_account_user_created_idx on events (account_id, (raw ->> 'user_id'), created_at desc)");
      await knex.raw("create index events_community_gift_idx on events (account_id, (raw ->> 'community_gift_id')) where (raw ->> 'community_gift_id') is not null");
      const trgm = await knex.raw("select 1 from pg_available_extensions where name = 'pg_trgm'");
      if ((trgm.rows ?? trgm).length > 0) {
        await knex.raw('create extension if not exists pg_trgm');
        await knex.raw('create index events_raw_trgm_idx on events using gin ((raw::text) gin_trgm_ops)');
      }
    },
    async down(knex: Knex) {
      await knex.schema.dropTableIfExists('events');
    },
  },
  {
    name: '20261124100000_create_event_counts',
    async up(knex: Knex) {
      await knex.schema.createTable('event_counts', (t) => {
        t.uuid('account_id').notNullable().references('accounts.id').onDelete('CASCADE');
        t.date('day').notNullable();
        t.string('type', 100).notNullable();
        t.string('platform', 50).notNullable();
        t.bigInteger('n').notNullable();
        t.primary(['account_id', 'day', 'type', 'platform']);
      });
      // Bumped for an account by every statement that changes its events (a patched gift header
      // too): the version that guards kept event pages on PostgreSQL (src/infra/db/hot-read.ts).
      await knex.schema.createTable('event_versions', (t) => {
        t.uuid('account_id').primary().references('accounts.id').onDelete('CASCADE');
        t.bigInteger('n').notNullable();
      });
      await knex.raw(`
        create function events_bump_versions(accounts uuid[]) returns void language sql as $$
          insert into event_versions as v (account_id, n)
          select a, 1 from unnest(accounts) a where exists (select 1 from accounts where id = a) order by a
          on conflict (account_id) do update set n = v.n + 1;
        $$`);
      // `events_count_apply` adds net changes per (account, day, type, platform) in key order (two
      // concurrent statements lock counter rows in the same order) and drops rows that reach 0.
      // Each trigger passes what its statement added (+1) and removed (-1) among visible rows; a
      // transition table exists only for the operations that have it, hence one branch each.
      await knex.raw(`
        create function events_count_apply(deltas jsonb) returns void language sql as $$
          insert into event_counts as c (account_id, day, type, platform, n)
          select (e ->> 'a')::uuid, (e ->> 'd')::date, e ->> 't', e ->> 'p', sum((e ->> 'n')::bigint)
          from jsonb_array_elements(deltas) e
          -- An account being deleted takes its events and counts with it (cascade): nothing to count.
          where exists (select 1 from accounts where id = (e ->> 'a')::uuid)
          group by 1, 2, 3, 4 having sum((e ->> 'n')::bigint) <> 0
          order by 1, 2, 3, 4
          on conflict (account_id, day, type, platform) do update set n = c.n + excluded.n;
          delete from event_counts
          where n <= 0 and account_id in (select (e ->> 'a')::uuid from jsonb_array_elements(deltas) e where (e ->> 'n')::bigint < 0);
        $$`);
      const deltas = (table: string, sign: number) => `
        select coalesce(jsonb_agg(jsonb_build_object('a', account_id, 'd', day, 't', type, 'p', platform, 'n', n)), '[]'::jsonb)
        from (select account_id, (created_at at time zone 'UTC')::date as day, type, platform, ${sign} * count(*) as n
              from ${table} where not hidden group by 1, 2, 3, 4) grouped`;
      await knex.raw(`
        create function events_count_rows() returns trigger language plpgsql as $$
        begin
          if tg_op = 'INSERT' then
            perform events_count_apply((${deltas('new_rows', 1)}));
            perform events_bump_versions(array(select distinct account_id from new_rows));
          elsif tg_op = 'DELETE' then
            perform events_count_apply((${deltas('old_rows', -1)}));
            perform events_bump_versions(array(select distinct account_id from old_rows));
          else
            perform events_count_apply((${deltas('new_rows', 1)}) || (${deltas('old_rows', -1)}));
            perform events_bump_versions(array(select account_id from new_rows union select account_id from old_rows));
          end if;
          return null;
        end $$`);
      // Rows written before the triggers are counted once below: writers (other nodes still on the
      // previous release) are held off from here until this migration commits.
      await knex.raw('lock table events in share row exclusive mode');
      await knex.raw('create trigger events_count_insert after insert on events referencing new table as new_rows for each statement execute function events_count_rows()');
      await knex.raw('create trigger events_count_update after update on events referencing old table as old_rows new table as new_rows for each statement execute function events_count_rows()');
      await knex.raw('create trigger events_count_delete after delete on events referencing old table as old_rows for each statement execute function events_count_rows()');
      await knex.raw(`
        insert into event_counts (account_id, day, type, platform, n)
        select account_id, (created_at at time zone 'UTC')::date, type, platform, count(*)
        from events where not hidden group by 1, 2, 3, 4`);
    },
    async down(knex: Knex) {
      await knex.raw('drop trigger if exists events_count_insert on events');
      await knex.raw('drop trigger if exists events_count_update on events');
      await knex.raw('drop trigger if exists events_count_delete on events');
      await knex.raw('drop function if exists events_count_rows()');
      await knex.raw('drop function if exists events_count_apply(jsonb)');
      await knex.raw('drop function if exists events_bump_versions(uuid[])');
      await knex.schema.dropTableIfExists('event_versions');
      await knex.schema.dropTableIfExists('event_counts');
    },
  },
  {
    name: '20261128193000_events_api_json',
    async up(knex: Knex) {
      await knex.raw(API_JSON_NUMBER);
      await knex.raw(API_JSON);
    },
    async down(knex: Knex) {
      await knex.raw('drop function if exists api_json(jsonb)');
      await knex.raw('drop function if exists api_json_number(text)');
    },
  },
  {
    // `raw_text`: each event's `raw` as the API writes it (`api_json`), written with the row by a
    // trigger on every insert and every change of `raw`, whoever writes it (emit, platform ingest,
    // gift bundling, a bulk insert). The events page splices it (repo.ts `WIRE_ITEM`) and measures
    // its byte budget by it, instead of rendering and measuring `raw` on every read.
    name: '20261128230000_events_raw_text',
    async up(knex: Knex) {
      await knex.raw('alter table events add column raw_text text');
      await knex.raw(`create or replace function events_raw_text() returns trigger language plpgsql as $$
        begin
          new.raw_text := ${apiJsonSql('new.raw', 'r')};
          return new;
        end $$`);
      await knex.raw('create trigger events_raw_text before insert or update of raw on events for each row execute function events_raw_text()');
      await knex.raw('update events set raw_text = api_json(raw)');
      await knex.raw('alter table events alter column raw_text set not null');
    },
    async down(knex: Knex) {
      await knex.raw('drop trigger if exists events_raw_text on events');
      await knex.raw('drop function if exists events_raw_text()');
      await knex.raw('alter table events drop column if exists raw_text');
    },
  },
];

/**
 * The least magnitude JavaScript reads as Infinity (half way between the largest double and 2^1024,
 * which rounds to even: up), and the greatest it reads as 0 (half the least subnormal, 2^-1075).
 */
const READS_AS_INFINITY = (2n ** 1024n - 2n ** 970n).toString();
const READS_AS_ZERO = `0.${(5n ** 1075n).toString().padStart(1075, '0')}`;

/**
 * `api_json_number(text)`: a jsonb number's text (numeric's plain decimal) as JavaScript writes the
 * number it reads as (`JSON.stringify(JSON.parse(text))`): numbers of at most 15 characters (so at
 * most 15 significant digits, which a double holds exactly) from 1e-6 up without trailing fraction
 * zeros are written the same and pass as they are;
 * any other is rounded to the nearest double (PostgreSQL's float8 input rounds as JavaScript's
 * does) and its shortest round-trip digits laid out by ECMAScript's Number::toString: plain from 1e-6 up to 1e21, `d.ddde+n` / `de-n` otherwise;
 * past the double range Infinity (written `null`), below it 0.
 */
// (No question marks in these texts: knex reads each as a binding.)
const API_JSON_NUMBER = `
  create or replace function api_json_number(t text) returns text language plpgsql immutable strict parallel safe as $$
  declare
    n numeric;
    x float8;
    p int;
    s text;
    m text[];
    digits text;
    e int;
    k int;
    negative boolean;
  begin
    if length(t) <= 15 and t ~ '^-{0,1}(0|[1-9][0-9]*)(\\.[0-9]*[1-9]){0,1}$' and t !~ '^-{0,1}0\\.000000' then return t; end if;
    n := t::numeric;
    if abs(n) >= ${READS_AS_INFINITY} then return 'null'; end if;
    if abs(n) <= ${READS_AS_ZERO} then return '0'; end if;
    -- The double JavaScript reads (float8 input rounds correctly from the text, as JavaScript
    -- does; the numeric cast need not), and its fewest significant digits (from 15 up) that read
    -- back as it, each the nearest of its length (C's %.*e): Number::toString's digits. (float8's
    -- own shortest output differs where a shorter text lies exactly half way between doubles.)
    x := t::float8;
    -- (A subnormal double carries fewer digits: its shortest text may be shorter than 15.)
    for p in case when abs(x) < 2.2250738585072014e-308 then 0 else 14 end..16 loop
      s := ltrim(to_char(x, '9.' || repeat('9', p) || 'EEEE'));
      -- (A rounding of the largest doubles may read as Infinity: not theirs.)
      exit when abs(s::numeric) < ${READS_AS_INFINITY} and s::float8 = x;
    end loop;
    negative := left(s, 1) = '-';
    if negative then s := substr(s, 2); end if;
    m := regexp_match(s, '^([0-9]+)(\\.([0-9]+)){0,1}(e([-+][0-9]+)){0,1}$');
    digits := m[1] || coalesce(m[3], '');
    -- The value is 0.<digits> times 10^e.
    e := length(m[1]) + coalesce(m[5]::int, 0);
    k := length(digits) - length(ltrim(digits, '0'));
    digits := rtrim(ltrim(digits, '0'), '0');
    e := e - k;
    if digits = '' then return '0'; end if;
    k := length(digits);
    s := case
      when k <= e and e <= 21 then digits || repeat('0', e - k)
      when 0 < e and e <= 21 then left(digits, e) || '.' || substr(digits, e + 1)
      when -6 < e and e <= 0 then '0.' || repeat('0', -e) || digits
      else left(digits, 1) || case when k > 1 then '.' || substr(digits, 2) else '' end || 'e' || case when e >= 1 then '+' else '-' end || abs(e - 1)::text
    end;
    return case when negative then '-' || s else s end;
  end $$`;

/** A jsonb number's text as `api_json_number` writes it, the common case (short plain decimals, as written) decided inline. */
const numberSql = (t: string) =>
  `case when length(${t}) <= 15 and ${t} ~ '^-{0,1}(0|[1-9][0-9]*)(\\.[0-9]*[1-9]){0,1}$' and ${t} !~ '^-{0,1}0\\.000000' then ${t} else api_json_number(${t}) end`;

/** How one member value of a jsonb object or array is written by `api_json`: scalars inline, containers by `api_json`. */
const memberSql = (v: string) =>
  `case jsonb_typeof(${v}) when 'string' then ${v}::text when 'number' then ${numberSql(`${v}::text`)} when 'object' then api_json(${v}) when 'array' then api_json(${v}) else ${v}::text end`;

/**
 * SQL writing the jsonb object `v` as `api_json` does (`alias` names its members' row): members
 * joined without spaces, array-index keys (canonical integers up to 2^32 - 2) first, ascending,
 * then the others in jsonb's order, as an object JSON.parse made enumerates them. `api_json` is
 * made from this text.
 */
function apiJsonObjectSql(v: string, alias: string): string {
  const index = `case when ${alias}.key ~ '^(0|[1-9][0-9]{0,9})$' then case when ${alias}.key::bigint <= 4294967294 then ${alias}.key::bigint end end`;
  return `'{' || coalesce((select string_agg(to_json(${alias}.key)::text || ':' || ${memberSql(`${alias}.value`)}, ',' order by ${index} nulls last, ${alias}.n) from jsonb_each(${v}) with ordinality ${alias}(key, value, n)), '') || '}'`;
}

/**
 * What the text of a jsonb object holds when it is not a flat object that only needs its spaces
 * dropped: a nested object or array (a bracket after the first character), an array-index-like
 * key, or a number `api_json_number` would rewrite (16 or more digits, below 1e-6, trailing
 * fraction zeros). Strings that look alike only send an object the long way.
 */
const NOT_FLAT = `'.[[{]|"[0-9]+": |: -{0,1}([0-9.]{16}|0\\.000000)|\\.[0-9]*0[,}]'`;

/**
 * SQL writing the jsonb value `v` as `api_json(v)` does, for the trigger that writes each event's
 * `raw_text`: a small flat object whose keys and numbers JavaScript writes as jsonb does (most
 * events: a few names, ids and counts) is joined member by member, a quarter of what the
 * function's walk costs; any other value goes to `api_json`. (The test of the text is skipped for
 * large values, whose scan would cost more than it saves.)
 */
function apiJsonSql(v: string, alias: string): string {
  const flat = `(select '{' || coalesce(string_agg(to_json(${alias}.key)::text || ':' || ${alias}.value::text, ',' order by ${alias}.n), '') || '}' from jsonb_each(${v}) with ordinality ${alias}(key, value, n))`;
  return `case when jsonb_typeof(${v}) = 'object' and pg_column_size(${v}) <= 2048 and ${v}::text !~ ${NOT_FLAT} then ${flat} else api_json(${v}) end`;
}

/**
 * `api_json(jsonb)`: the JSON text JavaScript writes for the value as PostgreSQL hands it over
 * (`JSON.stringify(JSON.parse(raw::text))`), so a page the database renders is the bytes the API
 * answered when the service parsed and serialised it (repo.ts `textPage`): no spaces after `,` and
 * `:`; objects' keys in the order a parsed object enumerates them (`apiJsonObjectSql`); numbers
 * by `api_json_number`; strings, true, false and null as jsonb writes them (its string escapes
 * are JSON.stringify's: `\\"`, `\\\\`, `\\b\\f\\n\\r\\t`, other controls as `\\u00xx`; jsonb holds
 * no lone surrogate).
 */
const API_JSON = `
  create or replace function api_json(v jsonb) returns text language plpgsql immutable strict parallel safe as $$
  begin
    case jsonb_typeof(v)
    when 'object' then
      return ${apiJsonObjectSql('v', 'm')};
    when 'array' then
      return '[' || coalesce((select string_agg(${memberSql('m.value')}, ',' order by m.n) from jsonb_array_elements(v) with ordinality m(value, n)), '') || ']';
    when 'number' then
      return api_json_number(v::text);
    else
      return v::text;
    end case;
  end $$`;
