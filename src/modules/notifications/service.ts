/**
 * In-app notifications (Part 2, "Notifications"): delivery to a user, the list, actions, and
 * per-type delivery preferences. `notify` is the one door every notification goes through: it
 * reads the user's channel for the type (locked types always use their own) and writes the in-app
 * row (`in_app`, `in_app_email`), queues mail through the mail module's outbox (`email`,
 * `in_app_email`), or nothing (`off`), all in the caller's transaction. Actions belong to the module that owns the notification's
 * subject (invites: accounts) and register here with `onAction`; the handler runs inside the
 * same transaction that records the notification's new status.
 */
import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import { requireUserId, type AuthContext } from '../../auth/context';
import { AppError } from '../../errors';
import { shapeOf, toWire } from '../../http/mapping';
import type { Bus } from '../../infra/bus';
import type { Logger } from '../../infra/logger';
import { pageOf, type Page, type PageRequest } from '../../paging';
import { notificationMessages } from './errors';
import type { NotificationsRepo } from './repo';
import type { Notification, NotificationPreference, NotificationStatus } from './types';

export type { Notification, NotificationPreference } from './types';

export const CHANNELS = ['off', 'in_app', 'email', 'in_app_email'] as const;
export type Channel = (typeof CHANNELS)[number];

/** Every notification type, its default channel, and whether the user may change it. */
export const NOTIFICATION_TYPES: readonly { type: string; channel: Channel; locked: boolean }[] = [
  { type: 'invite', channel: 'in_app_email', locked: true },
  { type: 'member_joined', channel: 'in_app', locked: false },
  { type: 'member_removed', channel: 'in_app', locked: false },
  { type: 'developer_application', channel: 'in_app_email', locked: false },
  { type: 'developer_verification', channel: 'in_app_email', locked: false },
  { type: 'extension_review', channel: 'in_app_email', locked: false },
  { type: 'limit_request', channel: 'in_app_email', locked: false },
  { type: 'payout', channel: 'in_app_email', locked: false },
  { type: 'connection_reconnect_required', channel: 'in_app_email', locked: false },
];

/** A type missing from the list is delivered in-app only. */
const UNLISTED: { channel: Channel; locked: boolean } = { channel: 'in_app', locked: false };

const wantsInApp = (channel: Channel): boolean => channel === 'in_app' || channel === 'in_app_email';
const wantsEmail = (channel: Channel): boolean => channel === 'email' || channel === 'in_app_email';

/** What a notification may ask of the mail module (src/modules/mail). */
export interface NotificationMailer {
  queueForUser(userId: string, kind: string, data: Readonly<Record<string, unknown>>, db?: Knex | Knex.Transaction): Promise<string | null>;
}

/** A notification's type and data (the spec's), for a user. */
export type NotifyInput = Pick<Notification, 'type' | 'data'> & {
  userId: string;
  /** Extra values for the e-mail's template only (names the in-app data refers to by id). */
  mail?: Record<string, unknown>;
};


type ActionHandler = (trx: Knex.Transaction, userId: string, notification: Notification) => Promise<void>;

/** The wire form of a notification, as GET /v1/notifications lists it and `notifications:{user_id}` sends it. */
const notificationWire = shapeOf({ $ref: '#/components/schemas/Notification' });

export function createNotificationsService(deps: { repo: NotificationsRepo; knex: Knex; mail: NotificationMailer; bus?: Pick<Bus, 'publish'>; log?: Logger }) {
  const { repo, knex, mail, bus, log } = deps;

  /** Sends a new notification to the user's own socket channel. */
  async function announce(userId: string, notification: Notification): Promise<void> {
    if (!bus) return;
    const frame = JSON.stringify({ event_type: 'notification:created', data: toWire(notification, notificationWire) });
    await bus.publish(`notifications:${userId}`, frame).catch((error: unknown) => log?.warn({ err: error }, 'notification not announced'));
  }
  const actions = new Map<string, { handler: ActionHandler; status: NotificationStatus }>();

  return {
    /** Registers the handler of `action` on notifications of `type`, and the status it leaves. */
    onAction(type: string, action: string, status: NotificationStatus, handler: ActionHandler): void {
      actions.set(`${type}:${action}`, { handler, status });
    },

    /**
     * Delivers a notification as the user's preference for its type says; pass the transaction of
     * the change that caused it. Resolves with the in-app notification's id (null when none was written).
     */
    async notify(input: NotifyInput, db?: Knex.Transaction): Promise<string | null> {
      const known = NOTIFICATION_TYPES.find((t) => t.type === input.type) ?? UNLISTED;
      const channel = known.locked ? known.channel : (((await repo.preference(input.userId, input.type, db)) as Channel | undefined) ?? known.channel);
      let id: string | null = null;
      if (wantsInApp(channel)) {
        id = randomUUID();
        const written = await repo.insert({ id, user_id: input.userId, type: input.type, data: input.data }, db);
        // Announced once the change that caused it commits (never for one rolled back).
        if (db) void db.executionPromise.then(() => announce(input.userId, written), () => undefined);
        else await announce(input.userId, written);
      }
      if (wantsEmail(channel)) await mail.queueForUser(input.userId, input.type, { ...input.data, ...input.mail }, db);
      return id;
    },

    /** Removes a user's notifications of `type` whose `data[key]` is `value` (a withdrawn invite). */
    withdraw(userId: string, type: string, key: string, value: string, db: Knex.Transaction): Promise<void> {
      return repo.deleteByData(db, userId, type, key, value);
    },

    async list(ctx: AuthContext, request: PageRequest): Promise<Page<Notification>> {
      const { rows, total } = await repo.page(requireUserId(ctx), request.limit, request.offset);
      return pageOf(rows, total, request);
    },

    async act(ctx: AuthContext, id: string, action: string): Promise<Notification> {
      const userId = requireUserId(ctx);
      const unknown = () => AppError.validation(notificationMessages.unknownAction(action), { fields: [{ field: 'action', message: notificationMessages.unknownAction(action) }] });
      // An action no notification type takes is refused before the look-up, as REST's validator refuses it (the spec's enum).
      if (![...actions.keys()].some((key) => key.endsWith(`:${action}`))) throw unknown();
      return knex.transaction(async (trx) => {
        const row = await repo.forUpdate(trx, id, userId);
        if (!row) throw AppError.notFound(notificationMessages.notFound);
        const registered = actions.get(`${row.type}:${action}`);
        if (!registered) throw unknown();
        if (row.status === 'accepted' || row.status === 'declined') throw new AppError('CONFLICT', notificationMessages.alreadyAnswered);
        await registered.handler(trx, userId, row);
        return repo.setStatus(trx, id, registered.status);
      });
    },

    async markRead(ctx: AuthContext, id: string): Promise<Notification> {
      const row = await repo.markRead(id, requireUserId(ctx));
      if (!row) throw AppError.notFound(notificationMessages.notFound);
      return row;
    },

    markAllRead: (ctx: AuthContext): Promise<number> => repo.markAllRead(requireUserId(ctx)),

    unreadCount: (ctx: AuthContext): Promise<number> => repo.unreadCount(requireUserId(ctx)),

    async preferences(ctx: AuthContext): Promise<NotificationPreference[]> {
      const chosen = new Map((await repo.preferences(requireUserId(ctx))).map((p) => [p.type, p.channel as Channel]));
      return NOTIFICATION_TYPES.map((t) => ({ type: t.type, channel: t.locked ? t.channel : (chosen.get(t.type) ?? t.channel), locked: t.locked }));
    },

    async setPreference(ctx: AuthContext, type: string, channel: string): Promise<NotificationPreference> {
      const userId = requireUserId(ctx);
      const known = NOTIFICATION_TYPES.find((t) => t.type === type);
      if (!known) throw AppError.notFound(notificationMessages.unknownType(type));
      if (!(CHANNELS as readonly string[]).includes(channel)) throw AppError.validation(notificationMessages.unknownChannel(channel));
      if (known.locked) throw AppError.validation(notificationMessages.locked(type));
      await repo.setPreference(userId, type, channel);
      return { type, channel: channel as Channel, locked: false };
    },
  };
}

export type NotificationsService = ReturnType<typeof createNotificationsService>;
