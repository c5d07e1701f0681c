/**
 * Uniquely named throwaway databases on a PostgreSQL server, for test runs and benchmarks that
 * must not touch the database their URL names. drop() removes the database and its connections.
 */
import { randomBytes } from 'node:crypto';
import { Client } from 'pg';

export interface ScratchDatabase {
  url: string;
  drop(): Promise<void>;
}

async function onServer(url: string, sql: string): Promise<void> {
  const client = new Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

export async function createScratchDatabase(serverUrl: string, prefix = 't'): Promise<ScratchDatabase> {
  const name = `${prefix}_${process.pid}_${randomBytes(6).toString('hex')}`;
  await onServer(serverUrl, `CREATE DATABASE "${name}"`);
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    drop: () => onServer(serverUrl, `DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`),
  };
}
