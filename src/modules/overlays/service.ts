/**
 * Overlays and widget instances (Part 1, "Overlay, shared overlay, extension, widget tokens";
 * Part 2, channel map and "Widget access management"): the resources browser sources connect
 * to, the tokens bound to them (minted by the credential store, only their SHA-256 kept), token
 * rotation and revocation (open sockets end with TOKEN_REVOKED through the revocation notice),
 * and widget access entries. Gates are enforced by shared code; this service checks ownership and
 * answers the gates' widget access grants (`resourceGrants`: an entry lets a member without
 * `widgets:read` / `widgets:edit` read or update that one widget).
 *
 * Content: each resource carries an opaque `settings` object (bounded, so its
 * `overlay:update` frame stays far below the 64 KiB frame limit) and widgets a `type`. Updates
 * are optimistic: they name the `version` they were based on and apply only while it is current
 * (409 otherwise); a committed change is published on the bus channel `overlay:{id}` /
 * `widget:{id}`, which the socket relay hands to the browser sources subscribed there. Creates
 * hold the plan's `max_overlays` quota under the account's lock (plans module quotas).
 */
import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import type { components } from '../../../generated/openapi';
import type { OperationId } from '../../../generated/rest';
import { hasPermission, type AuthContext } from '../../auth/context';
import type { ResourceGrantChecker } from '../../auth/gates';
import type { Revocations } from '../../auth/revocations';
import type { CredentialStore } from '../../auth/store';
import { AppError } from '../../errors';
import { documentOperation, documentSchema, jsonSchemaOf, shapeOf, toWire, type Camelize } from '../../http/mapping';
import type { Bus } from '../../infra/bus';
import { isoTime } from '../../infra/db/database';
import { jsonTextWithin } from '../../infra/json-bytes';
import { camelName, type CamelCase } from '../../infra/names';
import type { ModuleApis } from '../contract';
import { overlayMessages } from './errors';
import { RESOURCE_SCHEMAS, RESOURCE_WRITES, type AccessEntry, type OverlaysRepo, type ResourceBodies, type ResourceColumns, type ResourceOf, type ResourceTable, type Widget } from './repo';
import { UUID_RE } from '../../infra/ids';

export type { Overlay, ResourceOf, ResourceTable, Widget } from './repo';

/** Opaque JSON (`settings`) as `unknown`: GraphQL's JSON scalar hands over any JSON value, which columnsOf refuses unless an object. */
type Unchecked<V> = V extends object ? (string extends keyof V ? unknown : V) : V;

/**
 * A create or update of a table's resource: the members of its REST bodies but `version` (update
 * takes it apart), camelCased, each optional and nullable (a GraphQL input leaves a member out or
 * sends null). Overlays and widgets each read their own bodies: widgets alone take a `type`.
 */
export type ResourceInput<T extends ResourceTable> = { [K in keyof ResourceBodies[T] & string as CamelCase<K>]?: Unchecked<ResourceBodies[T][K]> | null };

/** Bytes of JSON text a resource's settings may take (the frame that carries them stays below 64 KiB). */
export const MAX_SETTINGS_BYTES = 32768;
const WIDGET_TYPE_RE = /^[a-z0-9][a-z0-9_-]*$/;

export type IssuedToken = Camelize<components['schemas']['IssuedToken']>;

/** The resource as REST answers it (snake_case; settings untouched): the data of its `overlay:update` / `widget:update` frame. */
const wireShapes = { overlays: shapeOf({ $ref: `#/components/schemas/${RESOURCE_SCHEMAS.overlays}` }), widgets: shapeOf({ $ref: `#/components/schemas/${RESOURCE_SCHEMAS.widgets}` }) };
const invalid = (field: string, message: string) => AppError.validation(message, { fields: [{ field, message }] });

/**
 * The members a table's create and update bodies declare (`version` aside, which update takes
 * apart), by domain name: their column, and whether null may be written (read from the OpenAPI
 * bodies, so a member a body does not declare is never written, whatever a caller sends).
 */
function writableMembers(operationIds: readonly OperationId[]): ReadonlyMap<string, { column: string; nullable: boolean }> {
  const members = new Map<string, { column: string; nullable: boolean }>();
  for (const operationId of operationIds) {
    const properties = documentSchema(jsonSchemaOf(documentOperation(operationId).requestBody))?.properties;
    if (!properties || typeof properties !== 'object') throw new Error(`overlays: ${operationId} has no JSON body members in the OpenAPI document`);
    for (const [column, node] of Object.entries(properties)) {
      if (column === 'version') continue;
      const nullable = documentSchema(node)?.nullable === true || members.get(camelName(column))?.nullable === true;
      members.set(camelName(column), { column, nullable });
    }
  }
  return members;
}
const membersOf = { overlays: writableMembers(RESOURCE_WRITES.overlays), widgets: writableMembers(RESOURCE_WRITES.widgets) };

/**
 * The checked columns of a create or update (GraphQL reaches here unchecked; REST was checked
 * against the same bounds), of the members the table's bodies declare. `name`, `type` and
 * `settings` are checked here; any other member is written as given (its bounds are the spec's:
 * REST validates the body, GraphQL takes string limits from the REST twin), null only where the
 * body declares it nullable (elsewhere null is GraphQL's "left out"), a JSON object as its text.
 * So a member one resource adds in the spec and its migration needs nothing here.
 */
function columnsOf<T extends ResourceTable>(table: T, input: ResourceInput<T>): ResourceColumns<T> {
  const given: { readonly [member: string]: unknown } = input;
  const out: Record<string, unknown> = {};
  for (const [member, stored] of membersOf[table]) {
    const value = given[member];
    if (value === undefined || (value === null && !stored.nullable)) continue;
    if (member === 'name') {
      if (typeof value !== 'string' || value.length < 1 || [...value].length > 100) throw invalid('name', overlayMessages.invalidName);
      out.name = value;
    } else if (member === 'type') {
      if (typeof value !== 'string' || value.length > 50 || !WIDGET_TYPE_RE.test(value)) throw invalid('type', overlayMessages.invalidType);
      out.type = value;
    } else if (member === 'settings') {
      if (typeof value !== 'object' || Array.isArray(value)) throw invalid('settings', overlayMessages.invalidSettings(MAX_SETTINGS_BYTES));
      const text = jsonTextWithin(value, MAX_SETTINGS_BYTES);
      if (text === null) throw invalid('settings', overlayMessages.invalidSettings(MAX_SETTINGS_BYTES));
      out.settings = text;
    } else {
      out[stored.column] = value !== null && typeof value === 'object' ? JSON.stringify(value) : value;
    }
  }
  // Built member by member from the input's own members, each under its column: the table's columns.
  return out as ResourceColumns<T>;
}
const OVERLAY_KINDS = ['overlay', 'shared_overlay'] as const;

/** The roles of a widget access entry that hold each declared grant (an editor may also read). */
const WIDGET_GRANTS: Readonly<Record<string, readonly string[]>> = {
  'widget-access:viewer': ['viewer', 'editor'],
  'widget-access:editor': ['editor'],
};

export function createOverlaysService(deps: {
  repo: OverlaysRepo;
  knex: Knex;
  credentials: CredentialStore;
  revocations: Revocations;
  audit: Pick<ModuleApis['audit'], 'record'>;
  accounts: Pick<ModuleApis['accounts'], 'isMember'>;
  quotas: Pick<ModuleApis['plans']['quotas'], 'admit'>;
  bus: Pick<Bus, 'publish'>;
}) {
  const { repo, knex, credentials, revocations, audit, bus } = deps;
  const singular = (table: ResourceTable) => (table === 'overlays' ? 'overlay' : 'widget');
  const accountOf = (auth: AuthContext) => {
    if (!auth.accountId) throw AppError.unauthorized('No active account');
    return auth.accountId;
  };
  const notFound = (table: ResourceTable) => AppError.notFound(table === 'overlays' ? overlayMessages.overlayNotFound : overlayMessages.widgetNotFound);

  async function owned<T extends ResourceTable>(table: T, auth: AuthContext, id: string, db?: Knex.Transaction): Promise<ResourceOf<T>> {
    const row = UUID_RE.test(id) ? await repo.byId(table, accountOf(auth), id, db) : undefined;
    if (!row) throw notFound(table);
    return row;
  }

  const announce = (hashes: string[]) => Promise.all(hashes.map((hash) => revocations.announce({ credential_id: hash, kind: 'token' })));

  /** Revokes the live tokens of `kinds` bound to a resource, in `trx`; answers their hashes to announce after the commit. */
  async function revokeBound(trx: Knex.Transaction, accountId: string, subjectId: string, kinds: readonly string[]): Promise<string[]> {
    const live = await repo.liveTokens(accountId, subjectId, kinds, trx);
    for (const token of live) await credentials.revoke(token.id, trx);
    return live.map((t) => t.token_hash);
  }

  async function issue(auth: AuthContext, table: ResourceTable, id: string, kind: IssuedToken['kind'], expiresAt: Date | null): Promise<IssuedToken> {
    const accountId = accountOf(auth);
    const { minted, revoked } = await knex.transaction(async (trx) => {
      const resource = await owned(table, auth, id, trx);
      // The overlay token and the widget token rotate; shared overlay links add up.
      const revokedHashes = kind === 'shared_overlay' ? [] : await revokeBound(trx, accountId, resource.id, [kind]);
      const result = await credentials.mint({ kind, accountId, subjectId: resource.id, createdBy: auth.userId, label: resource.name, expiresAt }, trx);
      await audit.record({ scope: 'account', type: `account:${kind}_token_issued`, accountId, actorId: auth.userId, metadata: { subject_id: resource.id, token_id: result.row.id, rotated: revokedHashes.length } }, trx);
      return { minted: result, revoked: revokedHashes };
    });
    await announce(revoked);
    return { id: minted.row.id, kind, token: minted.token, subjectId: id, expiresAt: isoTime(minted.row.expires_at), createdAt: isoTime(minted.row.created_at) };
  }

  async function remove(auth: AuthContext, table: ResourceTable, id: string, kinds: readonly string[]): Promise<void> {
    const accountId = accountOf(auth);
    const revoked = await knex.transaction(async (trx) => {
      const resource = await owned(table, auth, id, trx);
      const hashes = await revokeBound(trx, accountId, resource.id, kinds);
      await repo.delete(table, resource.id, trx);
      await audit.record({ scope: 'account', type: `account:${table === 'overlays' ? 'overlay' : 'widget'}_deleted`, accountId, actorId: auth.userId, metadata: { id: resource.id, name: resource.name } }, trx);
      return hashes;
    });
    await announce(revoked);
  }

  /**
   * The widget access grants of the gates (`x-resource-grant`): `widget-access:viewer` is held
   * through a viewer or editor entry, `widget-access:editor` through an editor entry, on a widget
   * of the caller's active account. Only the member's own session holds them: an API key or a
   * popout token keeps exactly the scope it was given.
   */
  const resourceGrants: ResourceGrantChecker = {
    async holds(grant, resourceId, ctx) {
      const roles = Object.hasOwn(WIDGET_GRANTS, grant) ? WIDGET_GRANTS[grant]! : null;
      if (!roles || ctx.kind !== 'jwt' || !ctx.userId || !ctx.accountId) return false;
      if (resourceId !== null && !UUID_RE.test(resourceId)) return false;
      return repo.holdsAccess({ accountId: ctx.accountId, userId: ctx.userId, widgetId: resourceId, roles });
    },
  };

  /** Each table's list (see `list`): the widget list narrows to the caller's access entries. */
  const listers: { [T in ResourceTable]: (auth: AuthContext, accountId: string) => Promise<ResourceOf<T>[]> } = {
    overlays: (_auth, accountId) => repo.list('overlays', accountId),
    widgets: async (auth, accountId): Promise<Widget[]> => {
      if (hasPermission(auth, 'widgets:read')) return repo.list('widgets', accountId);
      return auth.userId ? repo.listGranted(accountId, auth.userId) : [];
    },
  };

  return {
    resourceGrants,
    /**
     * The account's overlays or widgets. A caller that reached the widget list through its access
     * entries alone (the gate's resource grant, without `widgets:read`) sees only those widgets.
     */
    async list<T extends ResourceTable>(auth: AuthContext, table: T): Promise<ResourceOf<T>[]> {
      return listers[table](auth, accountOf(auth));
    },
    async get<T extends ResourceTable>(auth: AuthContext, table: T, id: string): Promise<ResourceOf<T>> {
      return owned(table, auth, id);
    },
    /** Creates an overlay or widget within the plan's `max_overlays` (each kind counted apart). */
    async create<T extends ResourceTable>(auth: AuthContext, table: T, input: ResourceInput<T>): Promise<ResourceOf<T>> {
      const accountId = accountOf(auth);
      const given: { readonly [member: string]: unknown } = input;
      if (given.name === undefined || given.name === null) throw invalid('name', overlayMessages.invalidName);
      // What the input leaves out takes the column's default (settings {}, a widget's type custom).
      const row = { ...columnsOf(table, input), id: randomUUID(), account_id: accountId };
      return knex.transaction(async (trx) => {
        await deps.quotas.admit(trx, table, accountId);
        return repo.insert(table, row, trx);
      });
    },
    /**
     * Applies a change made at `version`: 409 CONFLICT (with the current version) when another
     * write came first; publishes the new state on the resource's channel once committed.
     */
    async update<T extends ResourceTable>(auth: AuthContext, table: T, id: string, input: ResourceInput<T> & { version: number }): Promise<ResourceOf<T>> {
      const accountId = accountOf(auth);
      if (!Number.isInteger(input.version) || input.version < 1 || input.version > 2147483647) throw invalid('version', overlayMessages.invalidVersion);
      const patch = columnsOf(table, input);
      const updated = await knex.transaction(async (trx) => {
        const current = await owned(table, auth, id, trx);
        const row = await repo.updateAt(table, accountId, current.id, input.version, patch, trx);
        if (!row) {
          const latest = await repo.byId(table, accountId, current.id, trx);
          const version = latest?.version ?? current.version;
          throw new AppError('CONFLICT', overlayMessages.staleVersion(table === 'overlays' ? 'Overlay' : 'Widget', version), { current_version: version });
        }
        await audit.record({ scope: 'account', type: `account:${singular(table)}_updated`, accountId, actorId: auth.userId, metadata: { id: row.id, version: row.version, fields: Object.keys(patch) } }, trx);
        return row;
      });
      await bus.publish(`${singular(table)}:${updated.id}`, JSON.stringify({ event_type: `${singular(table)}:update`, data: toWire(updated, wireShapes[table]) }));
      return updated;
    },
    deleteOverlay: (auth: AuthContext, id: string) => remove(auth, 'overlays', id, OVERLAY_KINDS),
    deleteWidget: (auth: AuthContext, id: string) => remove(auth, 'widgets', id, ['widget']),
    rotateOverlayToken: (auth: AuthContext, id: string) => issue(auth, 'overlays', id, 'overlay', null),
    createSharedOverlayToken(auth: AuthContext, id: string, expiresAt: string): Promise<IssuedToken> {
      const at = new Date(expiresAt);
      if (Number.isNaN(at.getTime()) || at.getTime() <= Date.now()) throw AppError.validation(overlayMessages.expiresInPast, { fields: [{ field: 'expires_at', message: overlayMessages.expiresInPast }] });
      return issue(auth, 'overlays', id, 'shared_overlay', at);
    },
    rotateWidgetToken: (auth: AuthContext, id: string) => issue(auth, 'widgets', id, 'widget', null),
    async revokeOverlayToken(auth: AuthContext, id: string, tokenId: string): Promise<void> {
      const accountId = accountOf(auth);
      const revoked = await knex.transaction(async (trx) => {
        const overlay = await owned('overlays', auth, id, trx);
        const live = (await repo.liveTokens(accountId, overlay.id, OVERLAY_KINDS, trx)).find((t) => t.id === tokenId);
        if (!live) throw AppError.notFound(overlayMessages.tokenNotFound);
        await credentials.revoke(live.id, trx);
        await audit.record({ scope: 'account', type: `account:${live.kind}_token_revoked`, accountId, actorId: auth.userId, metadata: { subject_id: overlay.id, token_id: live.id } }, trx);
        return [live.token_hash];
      });
      await announce(revoked);
    },
    async revokeWidgetToken(auth: AuthContext, id: string): Promise<void> {
      const accountId = accountOf(auth);
      const revoked = await knex.transaction(async (trx) => {
        const widget = await owned('widgets', auth, id, trx);
        const hashes = await revokeBound(trx, accountId, widget.id, ['widget']);
        if (hashes.length === 0) throw AppError.notFound(overlayMessages.tokenNotFound);
        await audit.record({ scope: 'account', type: 'account:widget_token_revoked', accountId, actorId: auth.userId, metadata: { subject_id: widget.id } }, trx);
        return hashes;
      });
      await announce(revoked);
    },
    async access(auth: AuthContext, widgetId: string): Promise<AccessEntry[]> {
      const widget = await owned('widgets', auth, widgetId);
      return repo.access(widget.id);
    },
    async grantAccess(auth: AuthContext, widgetId: string, input: { userId: string; role: 'viewer' | 'editor' }): Promise<AccessEntry> {
      const widget = await owned('widgets', auth, widgetId);
      if (!(await deps.accounts.isMember(input.userId, widget.accountId))) throw AppError.validation(overlayMessages.notMember);
      const id = randomUUID();
      if (!(await repo.grant({ id, widget_id: widget.id, user_id: input.userId, role: input.role, granted_by: auth.userId }))) throw new AppError('CONFLICT', overlayMessages.accessExists);
      return (await repo.access(widget.id)).find((r) => r.id === id)!;
    },
    async revokeAccess(auth: AuthContext, widgetId: string, accessId: string): Promise<void> {
      const widget = await owned('widgets', auth, widgetId);
      if (!UUID_RE.test(accessId) || !(await repo.revokeAccess(widget.id, accessId))) throw AppError.notFound(overlayMessages.accessNotFound);
    },
    /** Channel-account resolvers: the owning account of `overlay:{key}` and `widget:{widget_instance_id}` (presence on them). */
    channelAccounts: {
      key: ({ key }: Record<string, string>) => (key && UUID_RE.test(key) ? repo.accountOf('overlays', key) : Promise.resolve(null)),
      widget_instance_id: ({ widget_instance_id: id }: Record<string, string>) => (id && UUID_RE.test(id) ? repo.accountOf('widgets', id) : Promise.resolve(null)),
    },
  };
}

export type OverlaysService = ReturnType<typeof createOverlaysService>;
