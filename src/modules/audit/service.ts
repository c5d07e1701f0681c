/**
 * The audit log (Part 2, "Audit log"). `record()` is the one way every module writes a row; the
 * reads serve the caller's user-scope rows, the active account's account-scope rows, and every
 * row to operators. Names of the users, accounts and roles a row references are resolved at
 * read time (`resolved_names`): misses are omitted, raw ids stay.
 */
import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import { requireAccountId, requireUserId, type AuthContext } from '../../auth/context';
import { AppError } from '../../errors';
import { UUID_RE } from '../../infra/ids';
import { jsonTextWithin } from '../../infra/json-bytes';
import { pageOf, type Page, type PageRequest } from '../../paging';
import { auditMessages } from './errors';
import type { AuditRepo } from './repo';
import type { AuditItem, AuditRecord, AuditScope, ResolvedName, ResolvedNameRow } from './types';

export type { AuditItem, AuditScope, ResolvedName } from './types';

/** What a module records: a row's scope and type, and any of its other stored members (absent ones stored as null, metadata as {}). */
export type AuditEntry = Pick<AuditRecord, 'scope' | 'type'> & Partial<Pick<AuditRecord, 'userId' | 'accountId' | 'actorId' | 'ipAddress' | 'userAgent' | 'metadata'>>;

export type AuditPage = Page<AuditItem>;

/** The filters of every audit read; paging arrives apart, already bounded (src/paging.ts). */
export interface AuditFilter {
  type?: string | null;
  from?: string | null;
  to?: string | null;
}

export interface AdminAuditFilter extends AuditFilter {
  scope?: string | null;
  userId?: string | null;
  accountId?: string | null;
}

/** Looks up display names; provided by the accounts module. */
export type NameResolver = (ids: { users: string[]; accounts: string[]; roles: string[] }) => Promise<ResolvedNameRow[]>;

/** Event types a trusted service may ingest (Part 2, "Audit log"). */
export const INGESTIBLE_TYPES = ['user:login', 'user:login_failed', 'user:mfa_enabled', 'user:mfa_disabled', 'user:oauth_granted'] as const;

/** An RFC 3339 timestamp, or undefined when absent or unparseable (ignored, not rejected). */
function parseTime(value: string | null | undefined): Date | undefined {
  if (!value || !/^\d{4}-\d{2}-\d{2}(T|\s|$)/.test(value)) return undefined;
  const date = new Date(value);
  return Number.isNaN(date.getTime()) ? undefined : date;
}

/** Ids a row references, by kind: its own columns, plus metadata keys named *user_id, *account_id, *role_id. */
function referencedIds(row: AuditRecord): { users: string[]; accounts: string[]; roles: string[] } {
  const users = [row.userId, row.actorId];
  const accounts = [row.accountId];
  const roles: (string | null)[] = [];
  for (const [key, value] of Object.entries(row.metadata ?? {})) {
    if (typeof value !== 'string' || !UUID_RE.test(value)) continue;
    if (/(^|_)user_id$|^invited_by$/.test(key)) users.push(value);
    else if (/(^|_)account_id$/.test(key)) accounts.push(value);
    else if (/(^|_)role_id$/.test(key)) roles.push(value);
  }
  const clean = (list: (string | null)[]) => [...new Set(list.filter((v): v is string => typeof v === 'string'))];
  return { users: clean(users), accounts: clean(accounts), roles: clean(roles) };
}

export function createAuditService(deps: { repo: AuditRepo; names: NameResolver; maxMetadataBytes: number }) {
  const { repo } = deps;

  async function page(query: { scope?: AuditScope; userId?: string; accountId?: string }, filter: AuditFilter, request: PageRequest): Promise<AuditPage> {
    const { limit, offset } = request;
    const { rows, total } = await repo.page({
      ...query,
      type: filter.type || undefined,
      from: parseTime(filter.from),
      to: parseTime(filter.to),
      limit,
      offset,
    });
    const refs = rows.map(referencedIds);
    const all = {
      users: [...new Set(refs.flatMap((r) => r.users))],
      accounts: [...new Set(refs.flatMap((r) => r.accounts))],
      roles: [...new Set(refs.flatMap((r) => r.roles))],
    };
    const found = rows.length ? await deps.names(all) : [];
    const byKey = new Map(found.map((n) => [`${n.kind}:${n.id}`, n]));
    const items = rows.map((row, i): AuditItem => {
      const r = refs[i]!;
      const resolvedNames = [
        ...r.users.map((id) => byKey.get(`user:${id}`)),
        ...r.accounts.map((id) => byKey.get(`account:${id}`)),
        ...r.roles.map((id) => byKey.get(`role:${id}`)),
      ]
        .filter((n) => n !== undefined)
        .map((n): ResolvedName => ({ id: n.id, kind: n.kind, displayName: n.display_name }));
      return { ...row, resolvedNames };
    });
    return pageOf(items, total, request);
  }

  return {
    /**
     * A deleted user's erasure (privacy module), in its transaction: the rows naming them stay (the
     * log is append-only and names them by id only; names resolve to nothing once they are gone),
     * but the client address and user agent those rows kept are cleared. Answers how many rows.
     */
    forgetUser: (trx: Knex.Transaction, userId: string): Promise<number> => repo.forgetUser(trx, userId),

    /** Appends one row; pass the transaction of the change it records so both land or neither. */
    async record(entry: AuditEntry, db?: Knex | Knex.Transaction): Promise<string> {
      const id = randomUUID();
      await repo.insert(
        {
          id,
          scope: entry.scope,
          type: entry.type,
          user_id: entry.userId ?? null,
          account_id: entry.accountId ?? null,
          actor_id: entry.actorId ?? null,
          ip_address: entry.ipAddress ?? null,
          user_agent: entry.userAgent ?? null,
          metadata: entry.metadata ?? {},
        },
        db,
      );
      return id;
    },

    myAuditLog(ctx: AuthContext, filter: AuditFilter, request: PageRequest): Promise<AuditPage> {
      return page({ scope: 'user', userId: requireUserId(ctx) }, filter, request);
    },

    accountAuditLog(ctx: AuthContext, filter: AuditFilter, request: PageRequest): Promise<AuditPage> {
      return page({ scope: 'account', accountId: requireAccountId(ctx) }, filter, request);
    },

    adminAuditLog(_ctx: AuthContext, filter: AdminAuditFilter, request: PageRequest): Promise<AuditPage> {
      const scope = filter.scope && ['user', 'account', 'system'].includes(filter.scope) ? (filter.scope as AuditScope) : undefined;
      if (filter.scope && !scope) throw AppError.validation(auditMessages.unknownScope(filter.scope));
      return page({ scope, userId: filter.userId ?? undefined, accountId: filter.accountId ?? undefined }, filter, request);
    },

    /** A trusted service's user-scope event: forced to user scope with no account. */
    async ingest(
      _ctx: AuthContext,
      input: { userId: string; type: string; ipAddress?: string | null; userAgent?: string | null; metadata?: unknown },
    ): Promise<{ id: string }> {
      if (!(INGESTIBLE_TYPES as readonly string[]).includes(input.type)) throw AppError.validation(auditMessages.unsupportedType(input.type));
      const metadata = input.metadata ?? {};
      if (typeof metadata !== 'object' || metadata === null || Array.isArray(metadata)) throw AppError.validation(auditMessages.metadataNotObject);
      if (jsonTextWithin(metadata, deps.maxMetadataBytes) === null) {
        const message = auditMessages.metadataTooLarge(deps.maxMetadataBytes);
        throw AppError.validation(message, { fields: [{ field: 'metadata', message }] });
      }
      const id = await this.record({
        scope: 'user',
        type: input.type,
        userId: input.userId,
        accountId: null,
        ipAddress: input.ipAddress ?? null,
        userAgent: input.userAgent ?? null,
        metadata: metadata as Record<string, unknown>,
      });
      return { id };
    },
  };
}

export type AuditService = ReturnType<typeof createAuditService>;
