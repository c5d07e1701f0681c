/**
 * Chat history benchmark: seeds 1,000,000 chat messages of one account (plus
 * 100,000 of a second account) into a scratch PostgreSQL database it creates and drops, then runs
 * the chat repository's own history query (page and count) for keyword searches and filters,
 * printing EXPLAIN ANALYZE timings and the median / p95 of timed runs against the 100 ms target.
 * Not a test: `DATABASE_URL=postgres://postgres@127.0.0.1:5432/test npx tsx scripts/bench-chat.ts`
 * (ROWS overrides the count). Exits 1 when a search misses the target.
 */
import { randomUUID } from 'node:crypto';
import { relationalMigrations } from '../src/app';
import { openDatabase } from '../src/infra/db/database';
import { createScratchDatabase } from '../src/infra/db/scratch';
import { createChatRepo, type HistoryQuery } from '../src/modules/chat/repo';
import { HISTORY_SEARCH_WINDOW_MS } from '../src/modules/chat/service';

const ROWS = Number(process.env.ROWS ?? 1_000_000);
const TARGET_MS = 100;
const RUNS = 15;

async function main(): Promise<void> {
  const server = process.env.DATABASE_URL;
  if (!server) throw new Error('DATABASE_URL (a PostgreSQL server) is required');
  const scratch = await createScratchDatabase(server, 'bench_chat');
  const db = await openDatabase({ url: scratch.url, dataDir: '', migrationSets: [{ table: 'knex_migrations', migrations: relationalMigrations }] });
  const knex = db.knex;
  let missed = false;
  try {
    const trgm = await knex.raw("select 1 from pg_indexes where indexname = 'chat_messages_message_trgm_idx'");
    console.log(`trigram index: ${trgm.rows.length ? 'yes' : 'no (pg_trgm unavailable: searches scan the time window)'}`);
    const account = randomUUID();
    const other = randomUUID();
    const owner = randomUUID();
    await knex('users').insert({ id: owner, display_name: 'bench' });
    await knex('accounts').insert([
      { id: account, name: 'bench', owner_id: owner },
      { id: other, name: 'other', owner_id: owner },
    ]);
    const started = performance.now();
    // 1M rows over the last 30 days: 20 senders, a vocabulary of words, 1 in 1000 with "giveaway",
    // 1 in 50,000 with a rare word; every 20th on platform_b with a live chat id.
    const seed = (acc: string, rows: number) =>
      knex.raw(
        `insert into chat_messages (id, account_id, platform, platform_message_id, platform_user_id, username, message, live_chat_id, raw, sent_at)
         select gen_random_uuid(), ?::uuid, case when g % 20 = 0 then 'platform_b' else 'platform_a' end, 'm' || g, 'u' || (g % 20), 'user' || (g % 20),
                (array['hello there', 'nice play', 'what a clutch', 'lol', 'good morning chat', 'pog', 'can you say hi', 'first time here'])[1 + g % 8]
                  || ' #' || g || case when g % 1000 = 0 then ' giveaway entry' else '' end || case when g % 50000 = 7 then ' xylophone' else '' end,
                case when g % 20 = 0 then 'live-' || (g / 100000) else null end, '{}'::jsonb,
                now() - (g::double precision / ? * interval '30 days')
         from generate_series(1, ?) g`,
        [acc, rows, rows],
      );
    await seed(account, ROWS);
    await seed(other, Math.max(1, Math.floor(ROWS / 10)));
    await knex.raw('analyze chat_messages');
    console.log(`seeded ${ROWS} + ${Math.floor(ROWS / 10)} rows in ${((performance.now() - started) / 1000).toFixed(1)} s`);

    const repo = createChatRepo(knex);
    const now = Date.now();
    const last12h = new Date(now - HISTORY_SEARCH_WINDOW_MS);
    const month = new Date(now - 31 * 24 * 3600 * 1000);
    const cases: { name: string; query: HistoryQuery; target: boolean }[] = [
      { name: 'search "giveaway", default 12-hour bound', query: { keywords: ['giveaway'], from: last12h }, target: true },
      { name: 'search "GIVEAWAY", whole month (from)', query: { keywords: ['GIVEAWAY'], from: month }, target: true },
      { name: 'search "xylophone" (rare), whole month', query: { keywords: ['xylophone'], from: month }, target: true },
      { name: 'search 3 keywords, whole month', query: { keywords: ['xylophone', 'giveaway', 'nonexistentword'], from: month }, target: true },
      { name: 'search "hello" (1 in 8), 12-hour bound', query: { keywords: ['hello'], from: last12h }, target: true },
      { name: 'search "hello" (1 in 8), whole month', query: { keywords: ['hello'], from: month }, target: false },
      { name: 'no filter, first page', query: {}, target: false },
      { name: 'platform_user_id u3', query: { platformUserId: 'u3' }, target: false },
      { name: 'live_chat_id live-3', query: { liveChatId: 'live-3' }, target: false },
    ];
    for (const c of cases) {
      const sql = repo.historySql(account, c.query, 50, 0);
      const explain = async (q: { sql: string; bindings: readonly unknown[] }) => {
        const result = await knex.raw(`explain (analyze, buffers off) ${q.sql}`, q.bindings as never);
        const lines = (result.rows as { 'QUERY PLAN': string }[]).map((r) => r['QUERY PLAN']);
        return { plan: lines.filter((l) => /Scan|Sort|Limit|Aggregate/.test(l)).slice(0, 4).map((l) => l.trim().replace(/\s+\(cost=[^)]*\)/, '')), time: lines.find((l) => l.startsWith('Execution Time')) };
      };
      const [page, count] = [await explain(sql.page), await explain(sql.count)];
      const times: number[] = [];
      let total = 0;
      for (let i = 0; i < RUNS; i++) {
        const t0 = performance.now();
        total = (await repo.history(account, c.query, 50, 0)).total;
        times.push(performance.now() - t0);
      }
      times.sort((a, b) => a - b);
      const median = times[Math.floor(times.length / 2)]!;
      const p95 = times[Math.min(times.length - 1, Math.floor(times.length * 0.95))]!;
      const ok = !c.target || p95 < TARGET_MS;
      if (!ok) missed = true;
      console.log(`\n${c.target ? (ok ? 'PASS' : 'MISS') : 'info'}  ${c.name}: total ${total}, page+count median ${median.toFixed(1)} ms, p95 ${p95.toFixed(1)} ms${c.target ? ` (target < ${TARGET_MS} ms)` : ''}`);
      console.log(`  page:  ${page.time}; ${page.plan.join(' | ')}`);
      console.log(`  count: ${count.time}; ${count.plan.join(' | ')}`);
    }
  } finally {
    await db.close();
    await scratch.drop();
  }
  process.exitCode = missed ? 1 : 0;
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
