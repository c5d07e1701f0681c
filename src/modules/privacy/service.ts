/**
 * Privacy erasure (Part 2 "Other admin privacy erasure endpoints"): an operator
 * holding the admin `admin:privacy-erase` erases one platform user's data everywhere the service
 * keeps it: chat messages, chatter profiles and the moderation log (chat module), the identifiers
 * in event payloads (events module), the top-chatter rows of public statistics (stats module).
 *
 * One transaction per request: every module's erasure and the audit row land together or not at
 * all. Kept results follow from that transaction: the event page cache is guarded by the
 * per-account event versions the update bumps (PostgreSQL) or by the embedded store's write count
 * (src/infra/db/hot-read.ts), and no other module keeps chat, chatter or statistics reads. The
 * audit row names the subject only by an opaque hash, never by the names or texts erased. A
 * repeat finds nothing left and answers zeros. Owns no table; reaches the others only through
 * their modules' APIs.
 *
 * A signed-up user's erasure (`eraseUserTraces`) is the part of an operator's user deletion
 * (operators module, `DELETE /v1/admin/users/{id}`) that the user row's foreign keys do not
 * carry: the mail kept for them (mail module) and the client addresses of the audit rows naming
 * them (audit module). It runs in the deletion's transaction, before the row goes.
 */
import { createHash } from 'node:crypto';
import type { Knex } from 'knex';
import type { components } from '../../../generated/openapi';
import type { AuthContext } from '../../auth/context';
import { AppError } from '../../errors';
import { shapeOf, toWire, type Camelize } from '../../http/mapping';
import type { ModuleApis } from '../contract';
import { privacyMessages } from './errors';

/** The answer (spec `PrivacyErasure`; the GraphQL type of the same name). */
export type PrivacyErasure = Camelize<components['schemas']['PrivacyErasure']>;
type Platform = PrivacyErasure['platform'];
/** The audit row's `erased` counts carry the answer's wire names. */
const erasureShape = shapeOf({ $ref: '#/components/schemas/PrivacyErasure' });

export const PRIVACY_PLATFORMS: readonly Platform[] = ['platform_a', 'platform_b', 'platform_c'];
const isPlatform = (value: string): value is Platform => (PRIVACY_PLATFORMS as readonly string[]).includes(value);
const MAX_ID = 200;

export interface PrivacyDeps {
  knex: Knex;
  chat: Pick<ModuleApis['chat'], 'eraseSubject'>;
  events: Pick<ModuleApis['events'], 'eraseSubject'>;
  stats: Pick<ModuleApis['stats'], 'eraseChatters'>;
  audit: Pick<ModuleApis['audit'], 'record' | 'forgetUser'>;
  mail: Pick<ModuleApis['mail'], 'eraseRecipient'>;
}

/** What a user's erasure removed beyond their row's foreign keys, counted (the deletion's audit row keeps these counts). */
export interface UserTraces {
  mailMessages: number;
  auditRowsAnonymised: number;
}

/** The audit row's name for a subject: the same subject always hashes the same, the id is not readable from it. */
export const subjectHash = (platform: string, platformUserId: string): string => createHash('sha256').update(`${platform}:${platformUserId}`).digest('hex');

/**
 * A 1 to 200 character value, as the REST schema checks. Both bindings refuse other values
 * before this runs (GraphQL by its REST twin's rules, generated/graphql-argument-rules.ts); this
 * holds the domain to it for any other caller.
 */
function bounded(value: string | null | undefined, field: string): string | undefined {
  if (value === undefined || value === null) return undefined;
  if (value.length < 1 || value.length > MAX_ID) throw AppError.validation(privacyMessages.length(field));
  return value;
}

export function createPrivacyService(deps: PrivacyDeps) {
  const { knex, chat, events, stats, audit, mail } = deps;

  async function erase(ctx: AuthContext, route: 'chat' | 'platform_b_member', platform: Platform, platformUserId: string, username: string | undefined): Promise<PrivacyErasure> {
    const hash = subjectHash(platform, platformUserId);
    const erased = await knex.transaction(async (trx) => {
      const fromChat = await chat.eraseSubject(trx, platform, platformUserId, username ? [username] : []);
      const logins = new Set(fromChat.logins);
      const eventRows = await events.eraseSubject(trx, platform, { platformUserId, logins });
      const statsRows = await stats.eraseChatters(trx, platform, [...logins]);
      const counts: PrivacyErasure['erased'] = { chatMessages: fromChat.messages, chatUsers: fromChat.users, moderationEntries: fromChat.moderation, events: eventRows, statsRows };
      await audit.record(
        {
          scope: 'system',
          type: 'system:privacy_erased',
          userId: ctx.userId,
          actorId: ctx.userId,
          metadata: {
            route,
            platform,
            subject_hash: hash,
            username_given: username !== undefined,
            erased: (toWire({ erased: counts }, erasureShape) as { erased: unknown }).erased,
          },
        },
        trx,
      );
      return counts;
    });
    return { platform, subjectHash: hash, erased };
  }

  return {
    /** POST /v1/admin/privacy/chat/erase, GraphQL adminEraseChatSubject. */
    async eraseChatSubject(ctx: AuthContext, input: { platform: string; platformUserId: string; username?: string | null }): Promise<PrivacyErasure> {
      const { platform } = input;
      if (!isPlatform(platform)) throw AppError.validation(privacyMessages.unsupportedPlatform(platform));
      const platformUserId = bounded(input.platformUserId, 'platform_user_id')!;
      return erase(ctx, 'chat', platform, platformUserId, bounded(input.username, 'username'));
    },

    /**
     * A signed-up user's traces outside their own rows, in the caller's transaction (the operators'
     * user deletion): every message for them or to their address leaves the mail outbox, and the
     * audit rows naming them lose the client address and user agent they kept.
     */
    async eraseUserTraces(trx: Knex.Transaction, user: { id: string; email: string | null }): Promise<UserTraces> {
      const mailMessages = await mail.eraseRecipient(trx, user.id, user.email);
      const auditRowsAnonymised = await audit.forgetUser(trx, user.id);
      return { mailMessages, auditRowsAnonymised };
    },

    /** DELETE /v1/admin/privacy/platform_b/member/{id}, GraphQL adminErasePlatformBMember. */
    async erasePlatformBMember(ctx: AuthContext, id: string): Promise<PrivacyErasure> {
      return erase(ctx, 'platform_b_member', 'platform_b', bounded(id, 'id')!, undefined);
    },
  };
}

export type PrivacyService = ReturnType<typeof createPrivacyService>;
