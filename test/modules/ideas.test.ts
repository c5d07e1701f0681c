/**
 * The ideas board (Part 2, "Ideas board") over real HTTP and WebSocket: the gates of every
 * endpoint (`system:ideas_hub`, public reads and `system:ideas_hub_public`, user-scope `ideas:*`,
 * admin `ideas:edit` / `ideas:delete` for categories and tags, admin `ideas:moderate_*`,
 * own-or-moderator edits, the migration that carried the category grants over), validation without partial writes, the
 * status timeline, idea votes, comment votes (one per user, repeating the direction removes it),
 * sanitized comment HTML with mentions, nested comments, full-text search, filters, the four
 * sorts, participants, voters, tags and categories, and live updates on `ideas:list` and
 * `ideas:{idea_id}`.
 */
import { randomUUID } from 'node:crypto';
import { ideasMigrations } from '../../src/modules/ideas/migrations';
import { useTestApp } from '../helpers/app';
import { api, devLogin, type LoggedIn } from '../helpers/users';
import { closeSocketsAfterEach, connect, type TestSocket } from '../helpers/ws';

const boardAdminEmail = `board-admin-${randomUUID()}@example.test`;
const t = useTestApp({ rate_limits: { enabled: false }, auth: { bootstrap_admins: [boardAdminEmail] } });
const opened = closeSocketsAfterEach();

interface Idea {
  id: string;
  title: string;
  description: string;
  status: string;
  category_id: string | null;
  category: { id: string; name: string } | null;
  tags: { id: string; name: string }[];
  author_id: string | null;
  author: { id: string; display_name: string; avatar_url: string | null } | null;
  vote_count_up: number;
  vote_count_down: number;
  vote_score: number;
  comment_count: number;
  my_vote: 'up' | 'down' | null;
  created_at: string;
  updated_at: string;
  timeline?: { event_type: string; actor_id: string | null; from_status: string | null; to_status: string }[];
}

interface Comment {
  id: string;
  idea_id: string;
  parent_id: string | null;
  author_id: string | null;
  body: string;
  mentions: string[];
  vote_count_up: number;
  vote_count_down: number;
  my_vote: 'up' | 'down' | null;
  is_deleted: boolean;
  replies?: Comment[];
}

let alice: LoggedIn;
let bob: LoggedIn;
let carol: LoggedIn;
let moderator: LoggedIn;
/** The seeded super-admin: holds admin `ideas:edit` / `ideas:delete`. */
let boardAdmin: LoggedIn;
let restricted: LoggedIn;
let roleless: LoggedIn;

/** Replaces a user's user roles (Member, Restricted, Moderator) and signs them in again. */
async function withUserRoles(user: LoggedIn, roles: string[]): Promise<LoggedIn> {
  const knex = t.app.db.knex;
  await knex('user_role_assignments').where({ user_id: user.userId }).delete();
  const rows = (await knex('user_roles').whereIn('name', roles).select('id')) as { id: string }[];
  if (rows.length) await knex('user_role_assignments').insert(rows.map((r) => ({ user_id: user.userId, role_id: r.id })));
  return devLogin(t, user.email);
}

beforeAll(async () => {
  alice = await devLogin(t, `alice-${randomUUID()}@example.test`, 'Alice');
  bob = await devLogin(t, `bob-${randomUUID()}@example.test`, 'Bob');
  carol = await devLogin(t, `carol-${randomUUID()}@example.test`, 'Carol');
  moderator = await withUserRoles(await devLogin(t, `mod-${randomUUID()}@example.test`, 'Mod'), ['Moderator']);
  restricted = await withUserRoles(await devLogin(t, `restricted-${randomUUID()}@example.test`, 'Restricted'), ['Restricted']);
  roleless = await withUserRoles(await devLogin(t, `roleless-${randomUUID()}@example.test`, 'Roleless'), []);
  boardAdmin = await devLogin(t, boardAdminEmail, 'Board admin');
});

const call = (method: string, path: string, user?: LoggedIn, body?: unknown, query?: Record<string, string>) =>
  api(t, method, path, { ...(user ? { token: user.accessToken } : {}), ...(body !== undefined ? { body } : {}), ...(query ? { query } : {}) });

async function newIdea(user: LoggedIn, overrides: Record<string, unknown> = {}): Promise<Idea> {
  const res = await call('POST', '/ideas', user, { title: `Idea ${randomUUID().slice(0, 8)}`, description: 'Something worth building.', ...overrides });
  expect(res.status).toBe(201);
  return res.body.data as Idea;
}

async function newCategory(name = `Category ${randomUUID().slice(0, 8)}`): Promise<{ id: string; name: string }> {
  const res = await call('POST', '/ideas/categories', boardAdmin, { name });
  expect(res.status).toBe(201);
  return res.body.data as { id: string; name: string };
}

async function newComment(user: LoggedIn, ideaId: string, body: string, parentId?: string): Promise<Comment> {
  const res = await call('POST', `/ideas/${ideaId}/comments`, user, { body, ...(parentId ? { parent_id: parentId } : {}) });
  expect(res.status).toBe(201);
  return res.body.data as Comment;
}

async function withFlag<T>(key: string, enabled: boolean, run: () => Promise<T>): Promise<T> {
  await t.app.modules.features.setGlobal(key, enabled);
  try {
    return await run();
  } finally {
    await t.app.modules.features.setGlobal(key, true);
  }
}

async function socket(user?: LoggedIn): Promise<TestSocket> {
  const s = await connect(t.wsUrl, user ? { headers: { Authorization: `Bearer ${user.accessToken}` } } : {});
  opened.push(s);
  expect((await s.next()).type).toBe('welcome');
  return s;
}

async function subscribe(s: TestSocket, channel: string): Promise<void> {
  s.send({ type: 'subscribe', channel });
  expect(await s.next()).toEqual({ type: 'subscribed', channel });
}

const SAMPLE = '00000000-0000-4000-8000-000000000001';
/** Every operation of the board with a request that passes validation. */
const EVERY_OPERATION: [string, string, unknown?][] = [
  ['GET', '/ideas'],
  ['POST', '/ideas', { title: 'A title', description: 'd' }],
  ['GET', `/ideas/${SAMPLE}`],
  ['PATCH', `/ideas/${SAMPLE}`, { title: 'A title' }],
  ['DELETE', `/ideas/${SAMPLE}`],
  ['PATCH', `/ideas/${SAMPLE}/status`, { status: 'done' }],
  ['POST', `/ideas/${SAMPLE}/vote`, { vote_type: 'up' }],
  ['DELETE', `/ideas/${SAMPLE}/vote`],
  ['GET', `/ideas/${SAMPLE}/comments`],
  ['POST', `/ideas/${SAMPLE}/comments`, { body: 'hi' }],
  ['PATCH', `/ideas/comments/${SAMPLE}`, { body: 'hi' }],
  ['DELETE', `/ideas/comments/${SAMPLE}`],
  ['POST', `/ideas/comments/${SAMPLE}/vote`, { vote_type: 'up' }],
  ['DELETE', `/ideas/comments/${SAMPLE}/vote`],
  ['GET', `/ideas/${SAMPLE}/participants`],
  ['GET', `/ideas/${SAMPLE}/voters`],
  ['GET', '/ideas/categories'],
  ['POST', '/ideas/categories', { name: 'x' }],
  ['PATCH', `/ideas/categories/${SAMPLE}`, { name: 'x' }],
  ['DELETE', `/ideas/categories/${SAMPLE}`],
  ['GET', '/ideas/tags'],
  ['POST', '/ideas/tags', { name: 'x' }],
  ['DELETE', `/ideas/tags/${SAMPLE}`],
];
const READS = EVERY_OPERATION.filter(([method, path]) => method === 'GET' && !path.endsWith('/participants'));
const WRITES = EVERY_OPERATION.filter(([method, path]) => method !== 'GET' || path.endsWith('/participants'));

describe('gates', () => {
  test('system:ideas_hub off: every operation answers 403 FEATURE_DISABLED, whoever calls', async () => {
    await withFlag('system:ideas_hub', false, async () => {
      for (const [method, path, body] of EVERY_OPERATION) {
        for (const user of [undefined, boardAdmin]) {
          const res = await call(method, path, user, body);
          if ((method === 'GET' && !path.endsWith('/participants')) || user) {
            expect({ method, path, status: res.status, body: res.body }).toEqual({ method, path, status: 403, body: { error: 'FEATURE_DISABLED', message: 'Feature disabled: system:ideas_hub' } });
          }
        }
      }
    });
  });

  test('public reads answer anonymous callers while system:ideas_hub_public is on', async () => {
    const idea = await newIdea(alice);
    await newComment(bob, idea.id, '<p>First!</p>');
    for (const [, path] of READS) {
      const res = await call('GET', path.replace(SAMPLE, idea.id));
      expect({ path, status: res.status }).toEqual({ path, status: 200 });
    }
    const one = await call('GET', `/ideas/${idea.id}`);
    expect((one.body.data as Idea).my_vote).toBeNull();
  });

  test('reads stay public with system:ideas_hub_public off (Part 2: GET endpoints are public): anonymous, restricted and roleless callers read', async () => {
    const idea = await newIdea(alice);
    await withFlag('system:ideas_hub_public', false, async () => {
      for (const [, path] of READS) {
        const target = path.replace(SAMPLE, idea.id);
        for (const reader of [undefined, bob, restricted, moderator, roleless]) {
          const res = await call('GET', target, reader);
          expect({ target, status: res.status }).toEqual({ target, status: 200 });
        }
      }
    });
  });

  test('writes and participants refuse anonymous callers with 401', async () => {
    for (const [method, path, body] of WRITES) {
      const res = await call(method, path, undefined, body);
      expect({ method, path, status: res.status, error: res.body.error }).toEqual({ method, path, status: 401, error: 'UNAUTHORIZED' });
    }
  });

  test('user-scope grants: a Restricted user may read but not create, vote, comment or edit', async () => {
    const idea = await newIdea(alice);
    const comment = await newComment(alice, idea.id, 'hello');
    const refusals: [string, string, unknown, string][] = [
      ['POST', '/ideas', { title: 'Nope nope', description: 'x' }, 'ideas:create'],
      ['POST', '/ideas/tags', { name: 'nope' }, 'ideas:create'],
      ['POST', `/ideas/${idea.id}/vote`, { vote_type: 'up' }, 'ideas:vote'],
      ['DELETE', `/ideas/${idea.id}/vote`, undefined, 'ideas:vote'],
      ['POST', `/ideas/${idea.id}/comments`, { body: 'x' }, 'ideas:comment_create'],
      ['PATCH', `/ideas/comments/${comment.id}`, { body: 'x' }, 'ideas:comment_edit'],
      ['DELETE', `/ideas/comments/${comment.id}`, undefined, 'ideas:comment_delete'],
      ['POST', `/ideas/comments/${comment.id}/vote`, { vote_type: 'up' }, 'ideas:comment_vote'],
      ['PATCH', `/ideas/${idea.id}`, { title: 'Changed title' }, 'ideas:edit'],
      ['DELETE', `/ideas/${idea.id}`, undefined, 'ideas:delete'],
    ];
    for (const [method, path, body, grant] of refusals) {
      const res = await call(method, path, restricted, body);
      expect({ method, path, status: res.status, body: res.body }).toEqual({ method, path, status: 403, body: { error: 'FORBIDDEN', message: `Missing permission: ${grant}` } });
    }
    expect((await call('GET', `/ideas/${idea.id}`)).body.data).toMatchObject({ title: idea.title, vote_count_up: 0, comment_count: 1 });
  });

  test('admin-scope grants: categories and tag deletion need admin ideas:edit / ideas:delete, status ideas:moderate_status', async () => {
    const idea = await newIdea(alice);
    const tag = (await call('POST', '/ideas/tags', alice, { name: `gate-${randomUUID().slice(0, 6)}` })).body.data as { id: string };
    const category = await newCategory();
    const refusals: [string, string, unknown, string][] = [
      ['POST', '/ideas/categories', { name: 'Mine' }, 'ideas:edit'],
      ['PATCH', `/ideas/categories/${category.id}`, { name: 'Mine' }, 'ideas:edit'],
      ['DELETE', `/ideas/categories/${category.id}`, undefined, 'ideas:delete'],
      ['DELETE', `/ideas/tags/${tag.id}`, undefined, 'ideas:delete'],
      ['PATCH', `/ideas/${idea.id}/status`, { status: 'done' }, 'ideas:moderate_status'],
    ];
    // Alice holds the user-scope ideas:edit / ideas:delete (own ideas); the Moderator user role adds
    // ideas:moderate_*. Neither is the admin-scope grant the board's category and tag writes check.
    for (const user of [alice, moderator]) {
      for (const [method, path, body, grant] of refusals) {
        if (user === moderator && grant === 'ideas:moderate_status') continue;
        const res = await call(method, path, user, body);
        expect({ method, path, status: res.status, body: res.body }).toEqual({ method, path, status: 403, body: { error: 'FORBIDDEN', message: `Missing permission: ${grant}` } });
      }
    }
  });

  test('an admin role holding only ideas:edit writes categories but deletes neither categories nor tags', async () => {
    const catalogue = (await call('GET', '/admin/admin-permissions', boardAdmin)).body.data as { permission: string; category: string }[];
    expect(catalogue).toEqual(expect.arrayContaining([{ permission: 'ideas:edit', category: 'ideas' }, { permission: 'ideas:delete', category: 'ideas' }]));
    const role = await call('POST', '/admin/admin-roles', boardAdmin, { name: `board-editor-${randomUUID().slice(0, 8)}`, permissions: ['ideas:edit'] });
    expect(role.status).toBe(201);
    expect((role.body.data as { permissions: string[] }).permissions).toEqual(['admin:access', 'ideas:edit']);
    const editor = await devLogin(t, `board-editor-${randomUUID()}@example.test`);
    expect((await call('PUT', `/admin/admin-roles/${(role.body.data as { id: string }).id}/members/${editor.userId}`, boardAdmin)).status).toBe(200);
    const signedIn = await devLogin(t, editor.email);
    const created = await call('POST', '/ideas/categories', signedIn, { name: `Edited ${randomUUID().slice(0, 8)}` });
    expect(created.status).toBe(201);
    const id = (created.body.data as { id: string }).id;
    expect((await call('PATCH', `/ideas/categories/${id}`, signedIn, { sort_order: 3 })).body.data).toMatchObject({ id, sort_order: 3 });
    expect((await call('DELETE', `/ideas/categories/${id}`, signedIn)).body).toEqual({ error: 'FORBIDDEN', message: 'Missing permission: ideas:delete' });
    const tag = (await call('POST', '/ideas/tags', alice, { name: `kept-${randomUUID().slice(0, 6)}` })).body.data as { id: string };
    expect((await call('DELETE', `/ideas/tags/${tag.id}`, signedIn)).body).toEqual({ error: 'FORBIDDEN', message: 'Missing permission: ideas:delete' });
  });

  test('the migration gives super-admin, and every admin role that held ideas:moderate_edit / _delete, the admin ideas:edit / ideas:delete', async () => {
    const knex = t.app.db.knex;
    const migration = ideasMigrations.find((m) => m.name === '20261125220000_admin_ideas_edit_delete')!;
    const id = (suffix: string) => `${suffix}-${randomUUID().slice(0, 8)}`;
    const rows = [
      { id: randomUUID(), name: id('mod-edit'), permissions: ['admin:access', 'ideas:moderate_edit'] },
      { id: randomUUID(), name: id('mod-both'), permissions: ['admin:access', 'ideas:moderate_edit', 'ideas:moderate_delete'] },
      { id: randomUUID(), name: id('unrelated'), permissions: ['admin:access', 'users:read'] },
    ];
    await knex('admin_roles').insert(rows.map((r) => ({ ...r, permissions: JSON.stringify(r.permissions) })));
    const superAdmin = (await knex('admin_roles').where({ name: 'super-admin' }).first()) as { permissions: string[] };
    await knex('admin_roles').where({ name: 'super-admin' }).update({ permissions: JSON.stringify(superAdmin.permissions.filter((p) => p !== 'ideas:edit' && p !== 'ideas:delete')) });
    try {
      await knex.transaction((trx) => migration.up(trx));
      await knex.transaction((trx) => migration.up(trx)); // a second run changes nothing
      const after = async (name: string) => ((await knex('admin_roles').where({ name }).first()) as { permissions: string[] }).permissions;
      expect(await after(rows[0]!.name)).toEqual(['admin:access', 'ideas:moderate_edit', 'ideas:edit']);
      expect(await after(rows[1]!.name)).toEqual(['admin:access', 'ideas:moderate_edit', 'ideas:moderate_delete', 'ideas:edit', 'ideas:delete']);
      expect(await after(rows[2]!.name)).toEqual(['admin:access', 'users:read']);
      const granted = await after('super-admin');
      expect(granted.filter((p) => p === 'ideas:edit' || p === 'ideas:delete').sort()).toEqual(['ideas:delete', 'ideas:edit']);
    } finally {
      await knex('admin_roles').whereIn('id', rows.map((r) => r.id)).delete();
      await knex('admin_roles').where({ name: 'super-admin' }).update({ permissions: JSON.stringify(superAdmin.permissions) });
    }
  });

  test('participants need authentication only', async () => {
    const idea = await newIdea(alice);
    expect((await call('GET', `/ideas/${idea.id}/participants`, restricted)).status).toBe(200);
    expect((await call('GET', `/ideas/${idea.id}/participants`)).status).toBe(401);
  });
});

describe('ideas', () => {
  test('create answers 201 with author, tags, category and a created timeline entry; GET returns it', async () => {
    const category = await newCategory();
    const tag = (await call('POST', '/ideas/tags', alice, { name: `ux-${randomUUID().slice(0, 6)}` })).body.data as { id: string; name: string };
    const res = await call('POST', '/ideas', alice, { title: '  Dark overlays  ', description: ' Night mode ', category_id: category.id, tag_ids: [tag.id, tag.id] });
    expect(res.status).toBe(201);
    const idea = res.body.data as Idea;
    expect(idea).toMatchObject({
      title: 'Dark overlays',
      description: 'Night mode',
      status: 'open',
      category_id: category.id,
      category: { id: category.id, name: category.name },
      tags: [{ id: tag.id, name: tag.name }],
      author_id: alice.userId,
      author: { id: alice.userId, display_name: 'Alice', avatar_url: null },
      vote_count_up: 0,
      vote_count_down: 0,
      vote_score: 0,
      comment_count: 0,
      my_vote: null,
    });
    expect(idea.timeline).toEqual([expect.objectContaining({ event_type: 'created', actor_id: alice.userId, from_status: null, to_status: 'open' })]);
    expect((res.body._links as { self: string }).self).toBe(`/v1/ideas/${idea.id}`);
    const read = await call('GET', `/ideas/${idea.id}`);
    expect(read.body.data).toEqual(idea);
  });

  test('validation: 400 with the message, and nothing is written', async () => {
    const category = await newCategory();
    const cases: [unknown, string][] = [
      [{ title: ' ab ', description: 'x' }, 'Title must be between 3 and 200 characters'],
      [{ title: 'Fine title', description: 'x', category_id: randomUUID() }, 'Unknown category'],
    ];
    for (const [body, message] of cases) {
      const res = await call('POST', '/ideas', alice, body);
      expect({ status: res.status, error: res.body.error, message: res.body.message }).toEqual({ status: 400, error: 'VALIDATION_ERROR', message });
    }
    const unknownTag = randomUUID();
    const res = await call('POST', '/ideas', alice, { title: 'Partial write?', description: 'x', category_id: category.id, tag_ids: [unknownTag] });
    expect(res.body).toMatchObject({ error: 'VALIDATION_ERROR', message: `Unknown tag: ${unknownTag}` });
    expect((await call('GET', '/ideas', undefined, undefined, { category_id: category.id })).body._meta).toMatchObject({ total: 0 });
    for (const body of [{ title: 'No description' }, { title: 'x'.repeat(201), description: 'x' }, { title: 'Extra', description: 'x', extra: 1 }, { title: 'Tags', description: 'x', tag_ids: Array.from({ length: 11 }, () => randomUUID()) }]) {
      const refused = await call('POST', '/ideas', alice, body);
      expect({ body, status: refused.status, error: refused.body.error }).toEqual({ body, status: 400, error: 'VALIDATION_ERROR' });
    }
    expect((await call('GET', '/ideas/not-a-uuid')).status).toBe(400);
    expect((await call('GET', `/ideas/${randomUUID()}`)).body).toEqual({ error: 'NOT_FOUND', message: 'Idea not found' });
    for (const query of <Record<string, string>[]>[{ sort: 'random' }, { limit: '101' }, { tag_ids: 'nope' }, { category_id: 'nope' }, { offset: '-1' }]) {
      const listed = await call('GET', '/ideas', undefined, undefined, query);
      expect({ query, status: listed.status, error: listed.body.error }).toEqual({ query, status: 400, error: 'VALIDATION_ERROR' });
    }
    expect((await call('GET', '/ideas', undefined, undefined, { tag_ids: 'nope' })).body.message).toBe('tag_ids must be comma-separated UUIDs');
  });

  test('edit and delete: own ideas with ideas:edit / ideas:delete, any idea with ideas:moderate_*', async () => {
    const idea = await newIdea(alice);
    const tag = (await call('POST', '/ideas/tags', alice, { name: `edit-${randomUUID().slice(0, 6)}` })).body.data as { id: string };
    const notOwn = await call('PATCH', `/ideas/${idea.id}`, bob, { title: 'Hijacked' });
    expect(notOwn.body).toEqual({ error: 'FORBIDDEN', message: 'You can only edit your own ideas' });
    const own = await call('PATCH', `/ideas/${idea.id}`, alice, { title: 'Better title', tag_ids: [tag.id] });
    expect(own.status).toBe(200);
    expect(own.body.data).toMatchObject({ title: 'Better title', description: idea.description, tags: [{ id: tag.id }] });
    const moderated = await call('PATCH', `/ideas/${idea.id}`, moderator, { description: 'Moderated', tag_ids: [] });
    expect(moderated.body.data).toMatchObject({ title: 'Better title', description: 'Moderated', tags: [], author_id: alice.userId });
    expect((await call('PATCH', `/ideas/${idea.id}`, alice, {})).status).toBe(400);
    expect((await call('DELETE', `/ideas/${idea.id}`, bob)).body).toEqual({ error: 'FORBIDDEN', message: 'You can only delete your own ideas' });
    expect((await call('DELETE', `/ideas/${idea.id}`, alice)).body).toEqual({ success: true });
    expect((await call('GET', `/ideas/${idea.id}`)).status).toBe(404);
    const other = await newIdea(bob);
    expect((await call('DELETE', `/ideas/${other.id}`, moderator)).body).toEqual({ success: true });
    expect((await call('DELETE', `/ideas/${other.id}`, moderator)).body).toEqual({ error: 'NOT_FOUND', message: 'Idea not found' });
  });

  test('status changes: any slug, one timeline entry per move, the same status changes nothing', async () => {
    const idea = await newIdea(alice);
    const moved = await call('PATCH', `/ideas/${idea.id}/status`, moderator, { status: 'in_progress' });
    expect(moved.status).toBe(200);
    expect(moved.body.data).toMatchObject({ status: 'in_progress' });
    await call('PATCH', `/ideas/${idea.id}/status`, moderator, { status: 'in_progress' });
    await call('PATCH', `/ideas/${idea.id}/status`, moderator, { status: 'needs_feedback' });
    const done = await call('PATCH', `/ideas/${idea.id}/status`, moderator, { status: 'done' });
    expect((done.body.data as Idea).timeline!.map((e) => [e.event_type, e.from_status, e.to_status, e.actor_id])).toEqual([
      ['created', null, 'open', alice.userId],
      ['status_changed', 'open', 'in_progress', moderator.userId],
      ['status_changed', 'in_progress', 'needs_feedback', moderator.userId],
      ['status_changed', 'needs_feedback', 'done', moderator.userId],
    ]);
    for (const status of ['Done', 'in progress', '1st', '']) {
      const res = await call('PATCH', `/ideas/${idea.id}/status`, moderator, { status });
      expect({ status, code: res.body.error, message: res.body.message }).toEqual({ status, code: 'VALIDATION_ERROR', message: 'Status must be a slug of lowercase letters, digits and underscores (1 to 40 characters)' });
    }
    expect((await call('PATCH', `/ideas/${randomUUID()}/status`, moderator, { status: 'done' })).status).toBe(404);
    expect((await call('GET', '/ideas', undefined, undefined, { status: 'needs_feedback', author_id: alice.userId })).body._meta).toMatchObject({ total: 0 });
    expect((await call('GET', '/ideas', undefined, undefined, { status: 'done', author_id: alice.userId })).body.data).toEqual([expect.objectContaining({ id: idea.id })]);
  });

  test('idea votes: one per user, a new direction replaces it, DELETE removes it; voters list them', async () => {
    const idea = await newIdea(alice);
    const up = await call('POST', `/ideas/${idea.id}/vote`, bob, { vote_type: 'up' });
    expect(up.body.data).toMatchObject({ vote_count_up: 1, vote_count_down: 0, vote_score: 1, my_vote: 'up' });
    expect((await call('POST', `/ideas/${idea.id}/vote`, bob, { vote_type: 'up' })).body.data).toMatchObject({ vote_count_up: 1, my_vote: 'up' });
    await call('POST', `/ideas/${idea.id}/vote`, carol, { vote_type: 'up' });
    const down = await call('POST', `/ideas/${idea.id}/vote`, bob, { vote_type: 'down' });
    expect(down.body.data).toMatchObject({ vote_count_up: 1, vote_count_down: 1, vote_score: 0, my_vote: 'down' });
    expect((await call('GET', `/ideas/${idea.id}`, carol)).body.data).toMatchObject({ my_vote: 'up' });
    const voters = await call('GET', `/ideas/${idea.id}/voters`);
    expect(voters.body.data).toEqual([
      expect.objectContaining({ id: bob.userId, display_name: 'Bob', vote_type: 'down' }),
      expect.objectContaining({ id: carol.userId, display_name: 'Carol', vote_type: 'up' }),
    ]);
    const removed = await call('DELETE', `/ideas/${idea.id}/vote`, bob);
    expect(removed.body.data).toMatchObject({ vote_count_up: 1, vote_count_down: 0, my_vote: null });
    expect((await call('DELETE', `/ideas/${idea.id}/vote`, bob)).status).toBe(200);
    expect((await call('POST', `/ideas/${idea.id}/vote`, bob, { vote_type: 'sideways' })).status).toBe(400);
    expect((await call('POST', `/ideas/${randomUUID()}/vote`, bob, { vote_type: 'up' })).body).toEqual({ error: 'NOT_FOUND', message: 'Idea not found' });
    expect((await call('GET', `/ideas/${idea.id}/voters`)).body._meta).toMatchObject({ total: 1 });
  });

  test('participants: the author, voters and commenters once each with their roles, searchable', async () => {
    const idea = await newIdea(alice);
    await call('POST', `/ideas/${idea.id}/vote`, bob, { vote_type: 'up' });
    await newComment(bob, idea.id, 'me too');
    await newComment(carol, idea.id, 'and me');
    await newComment(alice, idea.id, 'thanks');
    const res = await call('GET', `/ideas/${idea.id}/participants`, carol);
    expect(res.body.data).toEqual([
      { id: alice.userId, display_name: 'Alice', avatar_url: null, roles: ['author', 'commenter'] },
      { id: bob.userId, display_name: 'Bob', avatar_url: null, roles: ['voter', 'commenter'] },
      { id: carol.userId, display_name: 'Carol', avatar_url: null, roles: ['commenter'] },
    ]);
    expect((await call('GET', `/ideas/${idea.id}/participants`, carol, undefined, { search: 'AR' })).body.data).toEqual([expect.objectContaining({ id: carol.userId })]);
    expect((await call('GET', `/ideas/${idea.id}/participants`, carol, undefined, { search: '%' })).body.data).toEqual([]);
  });
});

describe('comments', () => {
  test('sanitizing: scripts, event handlers and foreign attributes go; a mention span stays and is listed', async () => {
    const idea = await newIdea(alice);
    const mention = `<span class="mention" data-mention-id="${bob.userId}" style="color:red" onclick="steal()">@Bob</span>`;
    const comment = await newComment(
      alice,
      idea.id,
      `<p onclick="alert(1)">Hi ${mention}, <span class="fancy">see</span> <a href="javascript:alert(1)">this</a> and <a href="https://example.com" target="_blank">that</a></p><script>alert(2)</script><img src=x onerror="alert(3)"><style>p{}</style>`,
    );
    expect(comment.body).toBe(
      `<p>Hi <span class="mention" data-mention-id="${bob.userId}">@Bob</span>, see <a rel="nofollow noopener noreferrer">this</a> and <a href="https://example.com" rel="nofollow noopener noreferrer">that</a></p>`,
    );
    expect(comment.mentions).toEqual([bob.userId]);
    const fake = await newComment(alice, idea.id, '<span data-mention-id="not-a-uuid" class="mention">@x</span> <span class="mention">@y</span>');
    expect(fake).toMatchObject({ body: '@x @y', mentions: [] });
    for (const body of ['<script>alert(1)</script>', '<p>  </p>', '']) {
      const res = await call('POST', `/ideas/${idea.id}/comments`, alice, { body });
      expect({ body, status: res.status, message: res.body.message }).toEqual({ body, status: 400, message: 'Comment body is required' });
    }
    const edited = await call('PATCH', `/ideas/comments/${comment.id}`, alice, { body: '<b onmouseover="x()">bold</b><iframe src="https://evil"></iframe>' });
    expect(edited.body.data).toMatchObject({ body: '<b>bold</b>', mentions: [] });
  });

  test('nested comments: replies under their parent, counts, own edits, tombstones for deleted parents', async () => {
    const idea = await newIdea(alice);
    const other = await newIdea(alice);
    const root = await newComment(alice, idea.id, 'root');
    const reply = await newComment(bob, idea.id, 'reply', root.id);
    const nested = await newComment(carol, idea.id, 'nested', reply.id);
    const second = await newComment(carol, idea.id, 'second');
    expect((await call('POST', `/ideas/${other.id}/comments`, bob, { body: 'wrong idea', parent_id: root.id })).body).toMatchObject({ error: 'VALIDATION_ERROR', message: 'Parent comment not found' });
    expect((await call('POST', `/ideas/${randomUUID()}/comments`, bob, { body: 'x' })).body).toEqual({ error: 'NOT_FOUND', message: 'Idea not found' });
    const tree = (await call('GET', `/ideas/${idea.id}/comments`)).body.data as Comment[];
    expect(tree.map((c) => c.id)).toEqual([root.id, second.id]);
    expect(tree[0]!.replies!.map((c) => c.id)).toEqual([reply.id]);
    expect(tree[0]!.replies![0]!.replies!.map((c) => c.id)).toEqual([nested.id]);
    expect((await call('GET', `/ideas/${idea.id}`)).body.data).toMatchObject({ comment_count: 4 });

    expect((await call('PATCH', `/ideas/comments/${reply.id}`, alice, { body: 'mine now' })).body).toEqual({ error: 'FORBIDDEN', message: 'You can only edit your own comments' });
    expect((await call('DELETE', `/ideas/comments/${reply.id}`, alice)).body).toEqual({ error: 'FORBIDDEN', message: 'You can only delete your own comments' });
    expect((await call('DELETE', `/ideas/comments/${reply.id}`, bob)).body).toEqual({ success: true });
    const afterDelete = (await call('GET', `/ideas/${idea.id}/comments`)).body.data as Comment[];
    expect(afterDelete[0]!.replies![0]).toMatchObject({ id: reply.id, is_deleted: true, body: '', author_id: null, replies: [{ id: nested.id }] });
    expect((await call('PATCH', `/ideas/comments/${reply.id}`, bob, { body: 'back' })).body).toEqual({ error: 'NOT_FOUND', message: 'Comment not found' });
    expect((await call('DELETE', `/ideas/comments/${second.id}`, moderator)).body).toEqual({ success: true });
    const final = (await call('GET', `/ideas/${idea.id}/comments`)).body.data as Comment[];
    expect(final.map((c) => c.id)).toEqual([root.id]);
    expect((await call('GET', `/ideas/${idea.id}`)).body.data).toMatchObject({ comment_count: 2 });
  });

  test('comment votes: up adds, up again removes, up then down switches; counts and my_vote', async () => {
    const idea = await newIdea(alice);
    const comment = await newComment(alice, idea.id, 'vote on me');
    const vote = (user: LoggedIn, voteType: string) => call('POST', `/ideas/comments/${comment.id}/vote`, user, { vote_type: voteType });

    expect((await vote(bob, 'up')).body.data).toMatchObject({ id: comment.id, vote_count_up: 1, vote_count_down: 0, my_vote: 'up' });
    expect((await vote(bob, 'up')).body.data).toMatchObject({ vote_count_up: 0, vote_count_down: 0, my_vote: null });
    expect((await vote(bob, 'up')).body.data).toMatchObject({ vote_count_up: 1, vote_count_down: 0, my_vote: 'up' });
    expect((await vote(bob, 'down')).body.data).toMatchObject({ vote_count_up: 0, vote_count_down: 1, my_vote: 'down' });
    expect((await vote(carol, 'down')).body.data).toMatchObject({ vote_count_up: 0, vote_count_down: 2, my_vote: 'down' });
    expect((await vote(carol, 'down')).body.data).toMatchObject({ vote_count_up: 0, vote_count_down: 1, my_vote: null });
    expect((await vote(carol, 'up')).body.data).toMatchObject({ vote_count_up: 1, vote_count_down: 1, my_vote: 'up' });

    const tree = (await call('GET', `/ideas/${idea.id}/comments`, bob)).body.data as Comment[];
    expect(tree[0]).toMatchObject({ vote_count_up: 1, vote_count_down: 1, my_vote: 'down' });
    expect(((await call('GET', `/ideas/${idea.id}/comments`)).body.data as Comment[])[0]!.my_vote).toBeNull();

    // DELETE removes the vote; with a direction only a vote of that direction.
    expect((await call('DELETE', `/ideas/comments/${comment.id}/vote`, carol, { vote_type: 'down' })).body.data).toMatchObject({ vote_count_up: 1, my_vote: 'up' });
    expect((await call('DELETE', `/ideas/comments/${comment.id}/vote`, carol)).body.data).toMatchObject({ vote_count_up: 0, vote_count_down: 1, my_vote: null });
    expect((await call('DELETE', `/ideas/comments/${comment.id}/vote`, carol)).status).toBe(200);
    expect((await vote(bob, 'sideways')).status).toBe(400);
    expect((await call('POST', `/ideas/comments/${randomUUID()}/vote`, bob, { vote_type: 'up' })).body).toEqual({ error: 'NOT_FOUND', message: 'Comment not found' });
  });
});

describe('listing', () => {
  test('full-text search on title and description (stemmed, phrases, exclusions)', async () => {
    const category = await newCategory();
    const dark = await newIdea(alice, { title: 'Dark theme for dashboards', description: 'Easier on the eyes when streaming at night.', category_id: category.id });
    const chat = await newIdea(bob, { title: 'Faster chat loading', description: 'The chat takes long to appear.', category_id: category.id });
    const search = async (q: string) =>
      ((await call('GET', '/ideas', undefined, undefined, { search: q, category_id: category.id })).body.data as Idea[]).map((i) => i.id).sort();
    expect(await search('streams')).toEqual([dark.id]);
    expect(await search('"dark theme"')).toEqual([dark.id]);
    expect(await search('chat')).toEqual([chat.id]);
    expect(await search('dashboards or loading')).toEqual([dark.id, chat.id].sort());
    expect(await search('chat -faster')).toEqual([]);
    expect(await search('nothing matches this')).toEqual([]);
  });

  test('the four sorts, filters and paging', async () => {
    const category = await newCategory();
    const tag = (await call('POST', '/ideas/tags', alice, { name: `sort-${randomUUID().slice(0, 6)}` })).body.data as { id: string };
    const first = await newIdea(alice, { category_id: category.id, tag_ids: [tag.id] });
    const second = await newIdea(bob, { category_id: category.id });
    const third = await newIdea(carol, { category_id: category.id, tag_ids: [tag.id] });
    // most_voted: second (+2), first (+1), third (-1)
    await call('POST', `/ideas/${second.id}/vote`, alice, { vote_type: 'up' });
    await call('POST', `/ideas/${second.id}/vote`, carol, { vote_type: 'up' });
    await call('POST', `/ideas/${first.id}/vote`, bob, { vote_type: 'up' });
    await call('POST', `/ideas/${third.id}/vote`, bob, { vote_type: 'down' });
    // most_commented: third (2), first (1), second (0)
    await newComment(alice, third.id, 'one');
    await newComment(bob, third.id, 'two');
    await newComment(bob, first.id, 'one');
    // recently_updated: second (edited last), then first, then third
    await call('PATCH', `/ideas/${third.id}`, carol, { description: 'Edited third' });
    await call('PATCH', `/ideas/${first.id}`, alice, { description: 'Edited first' });
    await call('PATCH', `/ideas/${second.id}`, bob, { description: 'Edited second' });

    const order = async (query: Record<string, string>) => ((await call('GET', '/ideas', undefined, undefined, { category_id: category.id, ...query })).body.data as Idea[]).map((i) => i.id);
    expect(await order({})).toEqual([third.id, second.id, first.id]);
    expect(await order({ sort: 'newest' })).toEqual([third.id, second.id, first.id]);
    expect(await order({ sort: 'most_voted' })).toEqual([second.id, first.id, third.id]);
    expect(await order({ sort: 'most_commented' })).toEqual([third.id, first.id, second.id]);
    expect(await order({ sort: 'recently_updated' })).toEqual([second.id, first.id, third.id]);

    expect(await order({ tag_ids: `${tag.id},${randomUUID()}` })).toEqual([third.id, first.id]);
    expect(await order({ author_id: bob.userId })).toEqual([second.id]);
    const paged = await call('GET', '/ideas', undefined, undefined, { category_id: category.id, limit: '2', page: '2' });
    expect(paged.body._meta).toEqual({ total: 3, page: 2, limit: 2, pages: 2 });
    expect((paged.body.data as Idea[]).map((i) => i.id)).toEqual([first.id]);
    expect(await order({ limit: '1', offset: '1' })).toEqual([second.id]);
    const listed = ((await call('GET', '/ideas', bob, undefined, { category_id: category.id })).body.data as Idea[]).find((i) => i.id === first.id)!;
    expect(listed).toMatchObject({ my_vote: 'up', vote_score: 1, comment_count: 1, tags: [{ id: tag.id }] });
    expect(listed.timeline).toBeUndefined();
  });

  test('categories: create, rename, unique names, delete leaves ideas without a category', async () => {
    const name = `Overlays ${randomUUID().slice(0, 6)}`;
    const created = await call('POST', '/ideas/categories', boardAdmin, { name, description: 'Overlay ideas', sort_order: -5 });
    expect(created.status).toBe(201);
    const category = created.body.data as { id: string };
    expect(category).toMatchObject({ name, description: 'Overlay ideas', sort_order: -5 });
    expect((await call('POST', '/ideas/categories', boardAdmin, { name: name.toUpperCase() })).body).toEqual({ error: 'CONFLICT', message: 'Category name already in use' });
    expect((await call('POST', '/ideas/categories', boardAdmin, { name: '   ' })).body).toMatchObject({ error: 'VALIDATION_ERROR', message: 'Category name must be between 1 and 100 characters' });
    const other = await newCategory();
    expect((await call('PATCH', `/ideas/categories/${other.id}`, boardAdmin, { name })).body).toEqual({ error: 'CONFLICT', message: 'Category name already in use' });
    expect((await call('PATCH', `/ideas/categories/${category.id}`, boardAdmin, { description: null })).body.data).toMatchObject({ name, description: null });
    expect((await call('PATCH', `/ideas/categories/${randomUUID()}`, boardAdmin, { name: 'x' })).body).toEqual({ error: 'NOT_FOUND', message: 'Category not found' });
    const listed = (await call('GET', '/ideas/categories')).body.data as { id: string }[];
    expect(listed[0]!.id).toBe(category.id);
    const idea = await newIdea(alice, { category_id: category.id });
    expect((await call('DELETE', `/ideas/categories/${category.id}`, boardAdmin)).body).toEqual({ success: true });
    expect((await call('GET', `/ideas/${idea.id}`)).body.data).toMatchObject({ category_id: null, category: null });
    expect((await call('DELETE', `/ideas/categories/${category.id}`, boardAdmin)).body).toEqual({ error: 'NOT_FOUND', message: 'Category not found' });
  });

  test('tags: created once per name (case-insensitive), searchable, deletion removes them from ideas', async () => {
    const name = `Access_${randomUUID().slice(0, 6)}`;
    const created = await call('POST', '/ideas/tags', alice, { name: ` ${name} ` });
    expect(created.status).toBe(201);
    const tag = created.body.data as { id: string; name: string };
    expect(tag.name).toBe(name);
    const again = await call('POST', '/ideas/tags', bob, { name: name.toLowerCase() });
    expect(again.status).toBe(200);
    expect(again.body.data).toEqual(tag);
    expect((await call('GET', '/ideas/tags', undefined, undefined, { search: name.slice(0, 9).toLowerCase() })).body.data).toEqual([tag]);
    expect((await call('GET', '/ideas/tags', undefined, undefined, { search: `${name.slice(4, 7)}%` })).body.data).toEqual([]);
    const idea = await newIdea(alice, { tag_ids: [tag.id] });
    expect((await call('DELETE', `/ideas/tags/${tag.id}`, boardAdmin)).body).toEqual({ success: true });
    expect((await call('GET', `/ideas/${idea.id}`)).body.data).toMatchObject({ tags: [] });
    expect((await call('DELETE', `/ideas/tags/${tag.id}`, boardAdmin)).body).toEqual({ error: 'NOT_FOUND', message: 'Tag not found' });
  });
});

describe('live updates', () => {
  test('ideas:list and ideas:{idea_id} deliver the board changes to an anonymous socket', async () => {
    const board = await socket();
    await subscribe(board, 'ideas:list');
    const created = await newIdea(alice, { title: 'Live idea' });
    expect(await board.next()).toEqual({ type: 'event', channel: 'ideas:list', event_type: 'idea:created', data: expect.objectContaining({ id: created.id, title: 'Live idea', my_vote: null }), cursor: expect.any(String) });

    const one = await socket(bob);
    await subscribe(one, `ideas:${created.id}`);
    const comment = await newComment(bob, created.id, '<p>Live <script>x</script>comment</p>');
    expect(await one.next()).toEqual({ type: 'event', channel: `ideas:${created.id}`, event_type: 'comment:created', data: expect.objectContaining({ id: comment.id, body: '<p>Live comment</p>', my_vote: null }), cursor: expect.any(String) });
    expect(await one.next()).toMatchObject({ event_type: 'idea:updated', data: { id: created.id, comment_count: 1 } });
    expect(await board.next()).toMatchObject({ event_type: 'idea:updated', data: { id: created.id, comment_count: 1 } });

    await call('POST', `/ideas/comments/${comment.id}/vote`, carol, { vote_type: 'up' });
    expect(await one.next()).toMatchObject({ event_type: 'comment:voted', data: { id: comment.id, vote_count_up: 1, my_vote: null } });

    await call('POST', `/ideas/${created.id}/vote`, carol, { vote_type: 'up' });
    expect(await one.next()).toMatchObject({ event_type: 'idea:voted', data: { id: created.id, vote_count_up: 1, my_vote: null } });
    expect(await board.next()).toMatchObject({ event_type: 'idea:voted', data: { id: created.id, vote_count_up: 1 } });

    await call('PATCH', `/ideas/${created.id}/status`, moderator, { status: 'planned' });
    expect(await one.next()).toMatchObject({ event_type: 'idea:status_changed', data: { id: created.id, status: 'planned' } });
    expect(await board.next()).toMatchObject({ event_type: 'idea:status_changed', data: { id: created.id, status: 'planned' } });

    await call('DELETE', `/ideas/comments/${comment.id}`, bob);
    expect(await one.next()).toEqual({ type: 'event', channel: `ideas:${created.id}`, event_type: 'comment:deleted', data: { id: comment.id, idea_id: created.id }, cursor: expect.any(String) });
    expect(await one.next()).toMatchObject({ event_type: 'idea:updated', data: { comment_count: 0 } });
    expect(await board.next()).toMatchObject({ event_type: 'idea:updated' });

    await call('DELETE', `/ideas/${created.id}`, alice);
    expect(await one.next()).toEqual({ type: 'event', channel: `ideas:${created.id}`, event_type: 'idea:deleted', data: { id: created.id }, cursor: expect.any(String) });
    expect(await board.next()).toEqual({ type: 'event', channel: 'ideas:list', event_type: 'idea:deleted', data: { id: created.id }, cursor: expect.any(String) });
  });

  test('subscribing is refused with FEATURE_DISABLED while system:ideas_hub_public or system:ideas_hub is off', async () => {
    for (const flag of ['system:ideas_hub_public', 'system:ideas_hub']) {
      await withFlag(flag, false, async () => {
        const s = await socket(alice);
        s.send({ type: 'subscribe', channel: 'ideas:list' });
        expect(await s.next()).toMatchObject({ type: 'error', code: 'FEATURE_DISABLED' });
      });
    }
  });
});
