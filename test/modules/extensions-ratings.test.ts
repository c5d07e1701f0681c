/**
 * Ratings over real HTTP on both protocols: a user whose active account installed an extension
 * rates it 1 to 5, once per user (rating again replaces it, from any account), reads and withdraws
 * it; the developer's public profile and the developer's own view show the average and count at
 * once. Refusals (no install, out of range, no user, unknown extension, no permission) read the
 * same on REST and GraphQL.
 */
import { randomUUID } from 'node:crypto';
import { gql, systemKey, useTestApp } from '../helpers/app';
import { approvedDeveloper, installExtension, publishedExtension as publishedExtensionOf } from '../helpers/extensions';
import { api, devLogin, joinAccount, type LoggedIn } from '../helpers/users';

const adminEmail = `ops-${randomUUID()}@example.test`;
const service = systemKey(`ratings-${randomUUID()}`, ['extension-store:review', 'extension-store:read']);
const t = useTestApp({ auth: { bootstrap_admins: [adminEmail], system_keys: [service.config] } });

type Json = Record<string, any>;
const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
const RATE = 'mutation($extensionId: UUID!, $rating: Int!) { rateExtension(extensionId: $extensionId, rating: $rating) { extensionId userId rating createdAt updatedAt } }';
const MINE = 'query($extensionId: UUID!) { myExtensionRating(extensionId: $extensionId) { rating } }';
const WITHDRAW = 'mutation($extensionId: UUID!) { deleteExtensionRating(extensionId: $extensionId) }';

let admin: LoggedIn;
let dev: LoggedIn & { profileSlug: string };
let profileSlug: string;

beforeAll(async () => {
  admin = await devLogin(t, adminEmail);
  dev = await approvedDeveloper(t, admin);
  profileSlug = dev.profileSlug;
});

const publishedExtension = (name: string) => publishedExtensionOf(t, dev, admin, name, ['events:read']);
const install = (user: LoggedIn, extId: string) => installExtension(t, user, { id: extId }, ['events:read']);

/** The extension as its developer's public profile lists it. */
async function listed(extId: string): Promise<{ extension: Json; stats: Json }> {
  const profile = (await api(t, 'GET', `/developer/profiles/${profileSlug}`)).body.data as Json;
  return { extension: (profile.extensions as Json[]).find((e) => e.id === extId)!, stats: profile.stats as Json };
}

function expectSameFailure(rest: { status: number; body: Json }, graphql: { body: Json }, status: number, code: string, message: string): void {
  expect({ status: rest.status, error: rest.body.error, message: rest.body.message }).toEqual({ status, error: code, message });
  expect(graphql.body.errors?.[0]).toEqual(expect.objectContaining({ message, extensions: expect.objectContaining({ code }) }));
}

test('users with an install rate 1 to 5, once each and editable; profiles show the average and count', async () => {
  const ext = await publishedExtension('Rated');
  expect((await listed(ext.id)).extension).toEqual(expect.objectContaining({ rating_avg: null, rating_count: 0 }));

  const alice = await devLogin(t);
  await install(alice, ext.id);
  const rated = await api(t, 'PUT', `/extensions/${ext.id}/rating`, { token: alice.accessToken, body: { rating: 4 } });
  expect(rated.status).toBe(200);
  expect(rated.body.data).toEqual({ extension_id: ext.id, user_id: alice.userId, rating: 4, created_at: expect.any(String), updated_at: expect.any(String) });
  expect((await api(t, 'GET', `/extensions/${ext.id}/rating`, { token: alice.accessToken })).body.data).toEqual(rated.body.data);

  // A second user over GraphQL; an administrator of Alice's account rates as themself.
  const bob = await devLogin(t);
  await install(bob, ext.id);
  const viaGql = await gql(t.url, RATE, { extensionId: ext.id, rating: 1 }, bearer(bob.accessToken));
  expect(viaGql.body.data).toEqual({ rateExtension: { extensionId: ext.id, userId: bob.userId, rating: 1, createdAt: expect.any(String), updatedAt: expect.any(String) } });
  const carol = await joinAccount(t, alice, await devLogin(t), { role: 'viewer' });
  expect((await api(t, 'PUT', `/extensions/${ext.id}/rating`, { token: carol.accessToken, body: { rating: 5 } })).status).toBe(200);
  expect((await listed(ext.id)).extension).toEqual(expect.objectContaining({ rating_avg: (4 + 1 + 5) / 3, rating_count: 3 }));

  // Rating again replaces the user's rating (GraphQL and REST alike): still three ratings.
  expect((await gql(t.url, RATE, { extensionId: ext.id, rating: 2 }, bearer(alice.accessToken))).body.data?.rateExtension).toEqual(expect.objectContaining({ rating: 2, createdAt: (rated.body.data as Json).created_at }));
  expect((await gql(t.url, MINE, { extensionId: ext.id }, bearer(alice.accessToken))).body.data).toEqual({ myExtensionRating: { rating: 2 } });
  const after = await listed(ext.id);
  expect(after.extension).toEqual(expect.objectContaining({ rating_avg: (2 + 1 + 5) / 3, rating_count: 3 }));
  expect(after.stats.avg_rating).toBeCloseTo((2 + 1 + 5) / 3);
  // The developer's own view of the extension shows the same.
  expect((await api(t, 'GET', `/developer/extensions/${ext.id}`, { token: dev.accessToken })).body.data).toEqual(expect.objectContaining({ rating_avg: (2 + 1 + 5) / 3, rating_count: 3 }));

  // Withdrawing: once over GraphQL, then REST's 404 on both protocols.
  expect((await gql(t.url, WITHDRAW, { extensionId: ext.id }, bearer(bob.accessToken))).body.data).toEqual({ deleteExtensionRating: true });
  expectSameFailure(await api(t, 'DELETE', `/extensions/${ext.id}/rating`, { token: bob.accessToken }), await gql(t.url, WITHDRAW, { extensionId: ext.id }, bearer(bob.accessToken)), 404, 'NOT_FOUND', 'Rating not found');
  expectSameFailure(await api(t, 'GET', `/extensions/${ext.id}/rating`, { token: bob.accessToken }), await gql(t.url, MINE, { extensionId: ext.id }, bearer(bob.accessToken)), 404, 'NOT_FOUND', 'Rating not found');
  expect((await listed(ext.id)).extension).toEqual(expect.objectContaining({ rating_avg: (2 + 5) / 2, rating_count: 2 }));
});

test('refusals read the same on REST and GraphQL', async () => {
  const ext = await publishedExtension('Guarded');
  const user = await devLogin(t);
  const rest = (token: string, body: unknown, id = ext.id) => api(t, 'PUT', `/extensions/${id}/rating`, { token, body });
  const graphql = (token: string, rating: number, id = ext.id) => gql(t.url, RATE, { extensionId: id, rating }, bearer(token));

  expectSameFailure(await rest(user.accessToken, { rating: 3 }), await graphql(user.accessToken, 3), 403, 'FORBIDDEN', 'Install this extension before rating it');
  const own = await install(user, ext.id);
  for (const rating of [0, 6]) expectSameFailure(await rest(user.accessToken, { rating }), await graphql(user.accessToken, rating), 400, 'VALIDATION_ERROR', 'Rating must be an integer from 1 to 5');
  const unknown = randomUUID();
  expectSameFailure(await rest(user.accessToken, { rating: 3 }, unknown), await graphql(user.accessToken, 3, unknown), 404, 'NOT_FOUND', 'Extension not found');
  // Keys and tokens acting for no user rate nothing, even holding the permission.
  expectSameFailure(await rest(service.key, { rating: 3 }), await graphql(service.key, 3), 403, 'FORBIDDEN', 'Only a user can rate an extension');
  // A member whose role lacks extension-store:review.
  const limited = await joinAccount(t, user, await devLogin(t), { roleName: `none-${randomUUID().slice(0, 8)}`, permissions: [] });
  expectSameFailure(await rest(limited.accessToken, { rating: 3 }), await graphql(limited.accessToken, 3), 403, 'FORBIDDEN', 'Missing permission: extension-store:review');
  expect((await rest(own.token, { rating: 3 })).body).toEqual({ error: 'FORBIDDEN', message: 'Missing permission: extension-store:review' });
  // Nothing was stored by the refusals.
  expect((await listed(ext.id)).extension).toEqual(expect.objectContaining({ rating_avg: null, rating_count: 0 }));
});
