/** The job system (docs/adr/005-background-jobs.md): pg-boss on PostgreSQL, in-process on the embedded store. */
import type { Config } from '../../config/config';
import type { Database } from '../db/database';
import type { Logger } from '../logger';
import { createMemoryJobs } from './memory';
import { createPgBossJobs } from './pgboss';
import type { Jobs } from './types';

export type { JobData, JobHandler, JobOptions, Jobs, JobStats } from './types';
export { deadLetterOf, periodSeconds } from './types';

export function openJobs(config: Readonly<Config>, db: Database, log: Logger): Jobs {
  const options = { log, pollIntervalMs: config.jobs.poll_interval_ms, periods: config.jobs.periods };
  return config.database_url && db.kind === 'postgresql' ? createPgBossJobs({ ...options, url: config.database_url, knex: db.knex }) : createMemoryJobs(options);
}
