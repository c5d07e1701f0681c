/**
 * Chat storage (knex): messages, the moderation log and platform user profiles. Each query
 * carries a short name comment for slow-query logs. The two reads of the connections module's
 * tables (`account_connections`, the login grant) are read-only look-ups of what send and
 * moderate need (the channel id, the acting user's login connection); its API reports states only.
 */
import type { Knex } from 'knex';
import type { components } from '../../../generated/openapi';
import type { WsFrameData } from '../../../generated/ws';
import { rowMapping, schemaRows, tableColumns, wsSchemaRows, type RowOf, type RowValue } from '../../infra/db/rows';
import type { ChatMessage, ChatSourceChannelView, ChatUserProfile, ChatUserSearchItem, UserTreatment } from './types';

type Schemas = components['schemas'];

/**
 * A message as mapped, before its shared-chat room (stored as the platform's snake_case JSON) is
 * read. The spec leaves `emotes` and `badges` untyped (any JSON); all three are stored as jsonb.
 */
const storedMessageOf = schemaRows('ChatMessage', {
  omit: ['emotes', 'badges', 'source_channel'],
  extra: tableColumns('chat_messages', ['emotes', 'badges', 'source_channel']),
});

/** The stored room of a shared-chat message in domain form; null unless the message is shared. */
function sourceOf(value: unknown): ChatSourceChannelView | null {
  if (typeof value !== 'object' || value === null) return null;
  const room = value as Record<string, unknown>;
  return {
    platformChannelId: String(room.platform_channel_id ?? ''),
    login: String(room.login ?? ''),
    displayName: typeof room.display_name === 'string' ? room.display_name : null,
    avatarUrl: typeof room.avatar_url === 'string' ? room.avatar_url : null,
  };
}

const messageOf = (row: Record<string, unknown>): ChatMessage => {
  const message = storedMessageOf.map(row);
  message.sourceChannel = message.isSharedChat ? sourceOf(message.sourceChannel) : null;
  return message as ChatMessage;
};

/** A message as it is written (the columns the database or a moderator's delete set left out; the room as stored). */
export type MessageInsert = Omit<Schemas['ChatMessage'], 'created_at' | 'is_deleted' | 'deleted_at' | 'deleted_by' | 'sent_at' | 'source_channel'> & {
  sent_at: Date | string;
  source_channel: unknown;
};

/**
 * A moderation log entry: the data of `chat:moderation_log` (no REST operation answers one, so its
 * members are the socket's, spec/ws-protocol/modules/chat.json), plus the columns on no wire.
 */
const moderationStored = tableColumns('chat_moderation_log', ['account_id', 'platform_action_id', 'raw']);
const moderationOf = wsSchemaRows('chat:moderation_log', { extra: moderationStored });
export type ModerationEntry = RowValue<typeof moderationOf>;

/** An entry as it is written: every member of the frame's data but its creation time, and the stored-only columns. */
export type ModerationInsert = Required<Omit<WsFrameData['chat:moderation_log'], 'created_at'>> & RowOf<typeof moderationStored>;

const searchItemOf = schemaRows('ChatUserSearchItem');
const storedProfileOf = schemaRows('ChatUserProfile');
/** A chatter's profile as the pipeline writes it: the profile's identity members, under its account (the platform as received). */
type ProfileWrite = Pick<ChatUserProfile, 'platformUserId' | 'username' | 'displayName' | 'avatarUrl'> & { accountId: string; platform: string };
export const userTreatments: readonly UserTreatment[] = ['active_monitoring', 'restricted', 'none'];
/** A chatter's profile; a treatment this release does not know reads as `none`. */
const profileOf = (row: Record<string, unknown>): ChatUserProfile => {
  const profile = storedProfileOf.map(row);
  if (!userTreatments.includes(profile.userTreatment)) profile.userTreatment = 'none';
  return profile;
};

/** Look-ups of the connections module's tables for send and moderate: internal reads, not on the wire. */
const channelOf = rowMapping(tableColumns('account_connections', ['platform_channel_id', 'reconnect_required']));
const botOf = rowMapping(tableColumns('account_bot_connections', ['platform_user_id', 'reconnect_required']));
const loginGrantOf = schemaRows('LoginConnection', {
  omit: ['provider', 'is_primary', 'created_at'],
  from: { id: 'c.id', platform_user_id: 'c.platform_user_id', display_name: 'c.display_name', reconnect_required: 'c.reconnect_required' },
});

export interface HistoryQuery {
  platform?: string;
  platformUserId?: string;
  liveChatId?: string;
  keywords?: readonly string[];
  from?: Date;
  to?: Date;
}

type Db = Knex | Knex.Transaction;

const jsonOrNull = (value: unknown) => (value === undefined || value === null ? null : JSON.stringify(value));
const rows = (list: unknown[]) => list as Record<string, unknown>[];

/** `%`, `_` and the escape character match literally inside a LIKE pattern. */
export const likeLiteral = (text: string) => text.replace(/[\\%_]/g, (c) => `\\${c}`);

const placeholders = (n: number) => Array.from({ length: n }, () => '?').join(', ');

const rowsOf = <T>(result: unknown): T[] => ((result as { rows?: T[] }).rows ?? (result as T[])) as T[];

export function createChatRepo(knex: Knex) {
  /** The history filter; the service guarantees a lower time bound whenever keywords are given. */
  function filtered(accountId: string, q: HistoryQuery) {
    const query = knex('chat_messages').where({ account_id: accountId });
    if (q.platform) query.where('platform', q.platform);
    if (q.platformUserId) query.where('platform_user_id', q.platformUserId);
    if (q.liveChatId) query.where('live_chat_id', q.liveChatId);
    if (q.from) query.where('sent_at', '>=', q.from);
    if (q.to) query.where('sent_at', '<=', q.to);
    if (q.keywords?.length) {
      const keywords = q.keywords;
      query.where((any) => {
        for (const keyword of keywords) any.orWhereRaw("message ilike ? escape '\\'", [`%${likeLiteral(keyword)}%`]);
      });
    }
    return query;
  }

  return {
    /** chat.history: newest first (sent_at, then id) */
    async history(accountId: string, q: HistoryQuery, limit: number, offset: number): Promise<{ rows: ChatMessage[]; total: number }> {
      const [page, count] = await Promise.all([
        filtered(accountId, q).orderBy([{ column: 'sent_at', order: 'desc' }, { column: 'id', order: 'desc' }]).limit(limit).offset(offset),
        filtered(accountId, q).count<{ count: string }[]>({ count: '*' }).first(),
      ]);
      return { rows: rows(page).map(messageOf), total: Number(count?.count ?? 0) };
    },
    /** chat.historySql: the history page query as SQL text with its bindings (the benchmark's EXPLAIN) */
    historySql(accountId: string, q: HistoryQuery, limit: number, offset: number): { page: Knex.Sql; count: Knex.Sql } {
      return {
        page: filtered(accountId, q).orderBy([{ column: 'sent_at', order: 'desc' }, { column: 'id', order: 'desc' }]).limit(limit).offset(offset).toSQL(),
        count: filtered(accountId, q).count({ count: '*' }).toSQL(),
      };
    },
    /** chat.insertMessage: undefined when (account, platform, platform message id) is stored already */
    async insertMessage(db: Db, row: MessageInsert): Promise<ChatMessage | undefined> {
      const [inserted] = await db('chat_messages')
        .insert({
          ...row,
          emotes: jsonOrNull(row.emotes),
          badges: jsonOrNull(row.badges),
          source_channel: jsonOrNull(row.source_channel),
          raw: JSON.stringify(row.raw),
        })
        .onConflict(['account_id', 'platform', 'platform_message_id'])
        .ignore()
        .returning('*');
      return inserted ? messageOf(inserted) : undefined;
    },
    /** chat.seen: the sender's profile, created or updated (last seen, count, names) */
    async seen(db: Db, p: ProfileWrite & { at: Date }): Promise<void> {
      await db.raw(
        `insert into chat_platform_users (account_id, platform, platform_user_id, username, display_name, avatar_url, last_seen_at, message_count)
         values (?, ?, ?, ?, ?, ?, ?, 1)
         on conflict (account_id, platform, platform_user_id) do update set
           username = excluded.username,
           display_name = coalesce(excluded.display_name, chat_platform_users.display_name),
           avatar_url = coalesce(excluded.avatar_url, chat_platform_users.avatar_url),
           last_seen_at = greatest(chat_platform_users.last_seen_at, excluded.last_seen_at),
           message_count = chat_platform_users.message_count + 1,
           updated_at = now()`,
        [p.accountId, p.platform, p.platformUserId, p.username, p.displayName, p.avatarUrl, p.at],
      );
    },
    /** chat.softDelete: marks a stored message deleted; undefined when there is none */
    async softDelete(db: Db, accountId: string, platform: string, platformMessageId: string, deletedBy: string | null): Promise<ChatMessage | undefined> {
      const [row] = await db('chat_messages')
        .where({ account_id: accountId, platform, platform_message_id: platformMessageId })
        .update({ is_deleted: true, deleted_at: db.fn.now(), deleted_by: deletedBy })
        .returning('*');
      return row ? messageOf(row) : undefined;
    },
    /** chat.insertModeration: undefined when the platform action id is logged already */
    async insertModeration(db: Db, row: ModerationInsert): Promise<ModerationEntry | undefined> {
      const [inserted] = await db('chat_moderation_log')
        .insert({ ...row, raw: JSON.stringify(row.raw) })
        .onConflict(['account_id', 'platform', 'platform_action_id'])
        .ignore()
        .returning('*');
      return inserted ? moderationOf.map(inserted) : undefined;
    },
    /** chat.moderationLog: newest first */
    async moderationLog(accountId: string, limit: number): Promise<ModerationEntry[]> {
      const found = await knex('chat_moderation_log').where({ account_id: accountId }).select(knex.raw(moderationOf.select)).orderBy([{ column: 'created_at', order: 'desc' }, { column: 'id', order: 'desc' }]).limit(limit);
      return rows(found).map(moderationOf.map);
    },
    /** chat.searchUsers: case-insensitive prefix over username and display name */
    async searchUsers(accountId: string, prefix: string, platforms: readonly string[] | undefined, limit: number): Promise<ChatUserSearchItem[]> {
      const pattern = `${likeLiteral(prefix.toLowerCase())}%`;
      const query = knex('chat_platform_users')
        .where({ account_id: accountId })
        .where((q) => q.whereRaw("lower(username) like ? escape '\\'", [pattern]).orWhereRaw("lower(display_name) like ? escape '\\'", [pattern]));
      if (platforms?.length) query.whereIn('platform', [...platforms]);
      const found = await query
        .select(knex.raw(searchItemOf.select))
        .orderByRaw('last_seen_at desc nulls last, message_count desc, platform asc, platform_user_id asc')
        .limit(limit);
      return rows(found).map(searchItemOf.map);
    },
    /** chat.profile */
    async profile(accountId: string, platform: string, platformUserId: string, db: Db = knex): Promise<ChatUserProfile | undefined> {
      const row = await db('chat_platform_users').where({ account_id: accountId, platform, platform_user_id: platformUserId }).first(db.raw(storedProfileOf.select));
      return row ? profileOf(row) : undefined;
    },
    /** chat.refreshed: stores what the platform answered (created with no messages when unknown) */
    async refreshed(p: ProfileWrite): Promise<ChatUserProfile> {
      const [row] = rowsOf<Record<string, unknown>>(
        await knex.raw(
          `insert into chat_platform_users (account_id, platform, platform_user_id, username, display_name, avatar_url, refreshed_at)
           values (?, ?, ?, ?, ?, ?, now())
           on conflict (account_id, platform, platform_user_id) do update set
             username = excluded.username, display_name = excluded.display_name, avatar_url = excluded.avatar_url,
             refreshed_at = excluded.refreshed_at, updated_at = now()
           returning *`,
          [p.accountId, p.platform, p.platformUserId, p.username, p.displayName, p.avatarUrl],
        ),
      );
      return profileOf(row!);
    },
    /** chat.setTreatment: the platform's treatment of a chatter (profile created when unknown) */
    async setTreatment(db: Db, p: Pick<ProfileWrite, 'accountId' | 'platform' | 'platformUserId' | 'username'> & { treatment: string }): Promise<void> {
      await db.raw(
        `insert into chat_platform_users (account_id, platform, platform_user_id, username, user_treatment)
         values (?, ?, ?, ?, ?)
         on conflict (account_id, platform, platform_user_id) do update set user_treatment = excluded.user_treatment, updated_at = now()`,
        [p.accountId, p.platform, p.platformUserId, p.username, p.treatment],
      );
    },
    /**
     * chat.retentionSweep: deletes messages and moderation log rows older than each account's
     * window (`windowsSql` selects `(account_id, days)`; 0 keeps forever); answers rows deleted.
     */
    async deleteExpired(windowsSql: string): Promise<number> {
      const result = await knex.raw(`
        with windows as (${windowsSql}),
        messages as (
          delete from chat_messages m using windows w
          where m.account_id = w.account_id and w.days > 0 and m.sent_at < now() - (w.days * interval '1 day')
          returning 1
        ),
        moderation as (
          delete from chat_moderation_log l using windows w
          where l.account_id = w.account_id and w.days > 0 and l.created_at < now() - (w.days * interval '1 day')
          returning 1
        )
        select (select count(*) from messages)::int + (select count(*) from moderation)::int as n`);
      return Number(rowsOf<{ n: number }>(result)[0]?.n ?? 0);
    },
    /**
     * chat.eraseSubject (privacy erasure): everything stored about one platform user
     * in every account, inside the caller's transaction. Their messages and profiles are deleted;
     * replies quoting them lose the quoted name and text; moderation rows naming them as target
     * are deleted and as moderator lose the moderator's identity and payload; a message deleted by
     * them loses `deleted_by`. Answers the counts and the logins (lower case) the subject was seen
     * with, read before the delete, for the modules that know a chatter by login only.
     */
    async eraseSubject(db: Db, platform: string, platformUserId: string, extraLogins: readonly string[]): Promise<{ messages: number; users: number; moderation: number; logins: string[] }> {
      const seen = await db
        .select(db.raw('lower(username) as login'))
        .from('chat_messages')
        .where({ platform, platform_user_id: platformUserId })
        .union((q) => q.select(db.raw('lower(username)')).from('chat_platform_users').where({ platform, platform_user_id: platformUserId }))
        .union((q) => q.select(db.raw('lower(target_username)')).from('chat_moderation_log').where({ platform, target_user_id: platformUserId }).whereNotNull('target_username'))
        .union((q) => q.select(db.raw('lower(moderator_name)')).from('chat_moderation_log').where({ platform, moderator_user_id: platformUserId }).whereNotNull('moderator_name'));
      const logins = [...new Set([...(seen as { login: string | null }[]).map((r) => r.login), ...extraLogins.map((l) => l.toLowerCase())])].filter((l): l is string => Boolean(l));
      // Replies quoting one of the subject's messages (same account) or naming them.
      const replies = await db('chat_messages as m')
        .where('m.platform', platform)
        .whereNot('m.platform_user_id', platformUserId)
        .where((q) => {
          q.whereExists((s) =>
            s.select(db.raw('1')).from('chat_messages as s').whereRaw('s.account_id = m.account_id').where({ 's.platform': platform, 's.platform_user_id': platformUserId }).whereRaw('s.platform_message_id = m.reply_to_message_id'),
          );
          if (logins.length) q.orWhereRaw(`lower(m.reply_to_username) in (${placeholders(logins.length)})`, logins);
        })
        .where((q) => q.whereNotNull('m.reply_to_username').orWhereNotNull('m.reply_to_message'))
        .update({ reply_to_username: null, reply_to_message: null })
        .returning('m.id');
      if (logins.length) await db('chat_messages').where({ platform }).whereRaw(`lower(deleted_by) in (${placeholders(logins.length)})`, logins).update({ deleted_by: null });
      // Counted through `returning` (the embedded driver answers a bare delete with a result object).
      const messages: unknown[] = await db('chat_messages').where({ platform, platform_user_id: platformUserId }).delete().returning('id');
      const users: unknown[] = await db('chat_platform_users').where({ platform, platform_user_id: platformUserId }).delete().returning('platform_user_id');
      const targeted: unknown[] = await db('chat_moderation_log').where({ platform, target_user_id: platformUserId }).delete().returning('id');
      const moderated: unknown[] = await db('chat_moderation_log')
        .where({ platform, moderator_user_id: platformUserId })
        .update({ moderator_user_id: null, moderator_name: null, raw: JSON.stringify({}) })
        .returning('id');
      return { messages: messages.length + (replies as unknown[]).length, users: users.length, moderation: targeted.length + moderated.length, logins };
    },
    /** chat.channelOf: the account's channel connection on a platform (connections module's table, read-only) */
    async channelOf(accountId: string, platform: string): Promise<{ platformChannelId: string; reconnectRequired: boolean } | undefined> {
      const row = await knex('account_connections').where({ account_id: accountId, platform }).first(knex.raw(channelOf.select));
      return row ? channelOf.map(row) : undefined;
    },
    /** chat.loginGrant: the acting user's login connection assigned in the account (connections module's tables, read-only) */
    async loginGrant(accountId: string, userId: string, provider: string): Promise<{ id: string; platformUserId: string; displayName: string | null; reconnectRequired: boolean } | undefined> {
      const row = await knex('login_assignments as a')
        .join('login_connections as c', 'c.id', 'a.login_connection_id')
        .where({ 'a.account_id': accountId, 'a.user_id': userId, 'a.provider': provider })
        .first(knex.raw(loginGrantOf.select));
      return row ? loginGrantOf.map(row) : undefined;
    },
    /** chat.botOf: the account's bot connection on a platform (connections module's table, read-only) */
    async botOf(accountId: string, platform: string): Promise<{ platformUserId: string; reconnectRequired: boolean } | undefined> {
      const row = await knex('account_bot_connections').where({ account_id: accountId, platform }).first(knex.raw(botOf.select));
      return row ? botOf.map(row) : undefined;
    },
  };
}

export type ChatRepo = ReturnType<typeof createChatRepo>;
