/** Notification storage (knex). */
import type { Knex } from 'knex';
import type { components } from '../../../generated/openapi';
import { schemaRows } from '../../infra/db/rows';
import type { Notification, NotificationStatus } from './types';

const notificationOf = schemaRows('Notification');
/** The columns `setStatus` answers: the mapping's own (it selects no expression). */
const notificationReturning = notificationOf.select.split(', ');

/** A notification to store, as stored: the spec's members the writer sets, with its owner (not on the wire). */
export type NotificationInsert = Pick<components['schemas']['Notification'], 'id' | 'type' | 'data'> & { user_id: string };

export function createNotificationsRepo(knex: Knex) {
  return {
    /** notifications.insert: answers the notification as the list shows it */
    async insert(row: NotificationInsert, db: Knex | Knex.Transaction = knex): Promise<Notification> {
      const [stored] = await db('notifications').insert({ ...row, data: JSON.stringify(row.data) }).returning(notificationReturning);
      return notificationOf.map(stored);
    },
    /** notifications.page */
    async page(userId: string, limit: number, offset: number): Promise<{ rows: Notification[]; total: number }> {
      const [rows, count] = await Promise.all([
        knex('notifications').where({ user_id: userId }).select(knex.raw(notificationOf.select)).orderBy([{ column: 'created_at', order: 'desc' }, { column: 'id', order: 'desc' }]).limit(limit).offset(offset),
        knex('notifications').where({ user_id: userId }).count<{ count: string }[]>({ count: '*' }).first(),
      ]);
      return { rows: rows.map((row: Record<string, unknown>) => notificationOf.map(row)), total: Number(count?.count ?? 0) };
    },
    /** notifications.forUpdate: locks the row for the action's transaction */
    async forUpdate(db: Knex.Transaction, id: string, userId: string): Promise<Notification | undefined> {
      const row = await db('notifications').where({ id, user_id: userId }).forUpdate().first(db.raw(notificationOf.select));
      return row ? notificationOf.map(row) : undefined;
    },
    /** notifications.setStatus */
    async setStatus(db: Knex.Transaction, id: string, status: NotificationStatus): Promise<Notification> {
      const [row] = await db('notifications').where({ id }).update({ status, read_at: db.raw('coalesce(read_at, now())') }).returning(notificationReturning);
      return notificationOf.map(row);
    },
    /** notifications.markRead: an unread notification of the user becomes read; answers it (undefined: not the user's) */
    async markRead(id: string, userId: string): Promise<Notification | undefined> {
      await knex('notifications').where({ id, user_id: userId, status: 'unread' }).update({ status: 'read', read_at: knex.raw('coalesce(read_at, now())') });
      const row = await knex('notifications').where({ id, user_id: userId }).first(knex.raw(notificationOf.select));
      return row ? notificationOf.map(row) : undefined;
    },
    /** notifications.markAllRead: answers how many changed */
    async markAllRead(userId: string): Promise<number> {
      return knex('notifications').where({ user_id: userId, status: 'unread' }).update({ status: 'read', read_at: knex.raw('coalesce(read_at, now())') });
    },
    /** notifications.unreadCount */
    async unreadCount(userId: string): Promise<number> {
      const row = await knex('notifications').where({ user_id: userId, status: 'unread' }).count<{ count: string }[]>({ count: '*' }).first();
      return Number(row?.count ?? 0);
    },
    /** notifications.deleteByData: drops notifications whose data[key] equals value */
    async deleteByData(db: Knex.Transaction, userId: string, type: string, key: string, value: string): Promise<void> {
      await db('notifications').where({ user_id: userId, type }).whereRaw('data ->> ? = ?', [key, value]).delete();
    },
    /** notifications.preferences */
    preferences(userId: string): Promise<{ type: string; channel: string }[]> {
      return knex('notification_preferences').where({ user_id: userId }).select('type', 'channel');
    },
    /** notifications.preference: the user's chosen channel for one type (undefined: the default) */
    async preference(userId: string, type: string, db: Knex | Knex.Transaction = knex): Promise<string | undefined> {
      const row = await db('notification_preferences').where({ user_id: userId, type }).first('channel');
      return row?.channel as string | undefined;
    },
    /** notifications.setPreference */
    async setPreference(userId: string, type: string, channel: string): Promise<void> {
      await knex('notification_preferences')
        .insert({ user_id: userId, type, channel })
        .onConflict(['user_id', 'type'])
        .merge({ channel, updated_at: knex.fn.now() });
    },
  };
}

export type NotificationsRepo = ReturnType<typeof createNotificationsRepo>;
