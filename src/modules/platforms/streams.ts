/**
 * What a platform's stream start, change or end report does beside its stored event (Part 2,
 * "Events"): `channel:online` / `channel:offline` on the account's events channel (transient,
 * never stored: live only on resume), and the account's stream session on `history:{account_id}`
 * (`history:session_started` when a start opens one, `history:session_updated` when a change or
 * the end updates it), only while the account has `feature:stream_history`. Sessions are kept in
 * `platform_stream_sessions`, one open per account and platform; a start while one is open
 * updates it (a platform repeating its report opens nothing twice), an end with none open does
 * nothing but the channel notice.
 */
import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import { ANONYMOUS, type AuthContext } from '../../auth/context';
import type { Bus } from '../../infra/bus';
import type { Logger } from '../../infra/logger';

type Json = Record<string, unknown>;

export interface StreamReport {
  accountId: string;
  platform: string;
  state: 'online' | 'offline' | 'update';
  platformChannelId?: string | null;
  /** The stored event the report arrived as (its id and raw). */
  event: { id: string; raw: Json; createdAt: string };
}

interface SessionRow {
  id: string;
  account_id: string;
  platform: string;
  platform_channel_id: string | null;
  stream_id: string | null;
  title: string | null;
  category: string | null;
  updates: number;
  started_at: Date | string;
  ended_at: Date | string | null;
  updated_at: Date | string;
}

const iso = (value: Date | string | null) => (value === null ? null : new Date(value).toISOString());
const text = (value: unknown, max: number): string | null => (typeof value === 'string' && value.length > 0 ? value.slice(0, max) : typeof value === 'number' && Number.isFinite(value) ? String(value) : null);
const when = (value: unknown): Date | null => {
  const parsed = typeof value === 'string' ? new Date(value) : null;
  return parsed && !Number.isNaN(parsed.getTime()) ? parsed : null;
};

/** The wire form of a session (the `data` of history:session_started / history:session_updated). */
export function sessionWire(row: SessionRow): Json {
  return {
    id: row.id,
    account_id: row.account_id,
    platform: row.platform,
    platform_channel_id: row.platform_channel_id,
    stream_id: row.stream_id,
    title: row.title,
    category: row.category,
    updates: row.updates,
    started_at: iso(row.started_at),
    ended_at: iso(row.ended_at),
    updated_at: iso(row.updated_at),
  };
}

export interface Streams {
  report(report: StreamReport): Promise<void>;
  /**
   * A music playback event (track, play, pause, skip, volume, device): published on the internal
   * `music:{account_id}`, which the relay delivers as `music_platform:now-playing` on
   * `music_platform:{account_id}` (data: `{ type, account_id, event_id, raw, at }`).
   */
  nowPlaying(accountId: string, event: { id: string; type: string; raw: Json; createdAt: string }): Promise<void>;
}

export function createStreams(deps: { knex: Knex; bus: Bus; log: Logger; features: { isEnabled(key: string, ctx: AuthContext): Promise<boolean> } }): Streams {
  const { knex, bus, log } = deps;

  async function publish(channel: string, message: Json): Promise<void> {
    await bus.publish(channel, JSON.stringify(message)).catch((error: unknown) => log.warn({ err: error, channel }, 'stream notice publish failed'));
  }

  async function session(report: StreamReport): Promise<void> {
    const ctx: AuthContext = { ...ANONYMOUS, accountId: report.accountId };
    if (!(await deps.features.isEnabled('feature:stream_history', ctx))) return;
    const raw = report.event.raw;
    const title = text(raw.title, 500);
    const category = text(raw.category_name ?? raw.category, 500);
    const open = () => knex<SessionRow>('platform_stream_sessions').where({ account_id: report.accountId, platform: report.platform }).whereNull('ended_at');
    let started = false;
    let row: SessionRow | undefined;
    if (report.state === 'online') {
      const inserted = await knex('platform_stream_sessions')
        .insert({
          id: randomUUID(),
          account_id: report.accountId,
          platform: report.platform,
          platform_channel_id: report.platformChannelId ?? null,
          stream_id: text(raw.stream_id, 200),
          title,
          category,
          started_at: when(raw.started_at) ?? new Date(report.event.createdAt),
        })
        .onConflict(knex.raw('(account_id, platform) where ended_at is null'))
        .ignore()
        .returning('*');
      row = (inserted as SessionRow[])[0];
      started = row !== undefined;
    }
    if (!row) {
      const patch: Json = { updated_at: knex.fn.now(), updates: knex.raw('updates + 1') };
      if (title !== null) patch.title = title;
      if (category !== null) patch.category = category;
      if (report.state === 'offline') patch.ended_at = when(raw.ended_at) ?? new Date(report.event.createdAt);
      row = ((await open().update(patch).returning('*')) as SessionRow[])[0];
    }
    if (!row) return;
    await publish(`history:${report.accountId}`, { event_type: started ? 'history:session_started' : 'history:session_updated', data: sessionWire(row) });
  }

  return {
    async nowPlaying(accountId, event) {
      await publish(`music:${accountId}`, { type: event.type, account_id: accountId, event_id: event.id, raw: event.raw, at: event.createdAt });
    },
    async report(report) {
      if (report.state !== 'update') {
        await publish(`events:${report.accountId}`, {
          type: report.state === 'online' ? 'channel:online' : 'channel:offline',
          account_id: report.accountId,
          platform: report.platform,
          platform_channel_id: report.platformChannelId ?? null,
          event_id: report.event.id,
          raw: report.event.raw,
          at: report.event.createdAt,
        });
      }
      await session(report).catch((error: unknown) => log.warn({ err: error, account_id: report.accountId }, 'stream session update failed'));
    },
  };
}
