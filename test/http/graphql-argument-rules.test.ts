/**
 * GraphQL string arguments carry their REST twin's `maxLength` (generated/graphql-argument-rules.ts,
 * derived at codegen from spec/openapi/): an over-long value is refused before execution with
 * the REST validator's code, message and details, word for word, whether it comes as a variable or
 * inline, in an input object, a list item or a query argument; nothing is stored. The limit counts
 * code points, as the REST validator does.
 */
import { gql, useTestApp } from '../helpers/app';
import { api, devLogin, type LoggedIn } from '../helpers/users';

const t = useTestApp({ rate_limits: { enabled: false } });
const bearer = (user: LoggedIn) => ({ authorization: `Bearer ${user.accessToken}` });

/** The REST error body as GraphQL carries it: `errors[0]` with the message and `extensions`. */
function asGraphqlError(body: Record<string, unknown>) {
  const { error, message, details } = body as { error: string; message: string; details?: unknown };
  return { message, extensions: { code: error, ...(details ? { details } : {}) } };
}

async function expectSameRefusal(rest: { status: number; body: Record<string, unknown> }, graphql: { body: { data?: unknown; errors?: unknown[] } }, expected: Record<string, unknown>) {
  expect(rest.status).toBe(400);
  expect(rest.body).toEqual(expected);
  expect(graphql.body.errors).toHaveLength(1);
  expect(graphql.body.errors![0]).toMatchObject(asGraphqlError(rest.body));
  expect(graphql.body.data ?? null).toBeNull();
}

const maxLength = (field: string, n: number) => ({
  error: 'VALIDATION_ERROR',
  message: `${field} must NOT have more than ${n} characters`,
  details: { fields: [{ field, message: `must NOT have more than ${n} characters` }] },
});

describe('GraphQL string arguments refused as their REST twin refuses them', () => {
  let user: LoggedIn;
  beforeAll(async () => {
    user = await devLogin(t);
  });

  const createPreset = 'mutation($i: CreateSettingPresetInput!) { createSettingPreset(input: $i) { id name } }';
  const presets = async () => ((await api(t, 'GET', '/me/setting-presets', { token: user.accessToken })).body.data as { name: string }[]).map((p) => p.name);

  test('createSettingPreset: a name over 100 characters, as a variable and inline, gets the REST body; nothing is stored', async () => {
    const name = 'p'.repeat(101);
    const rest = await api(t, 'POST', '/me/setting-presets', { token: user.accessToken, body: { kind: 'layout', name, payload: {} } });
    const byVariable = await gql(t.url, createPreset, { i: { kind: 'layout', name, payload: {} } }, bearer(user));
    await expectSameRefusal(rest, byVariable, maxLength('body.name', 100));
    const inline = await gql(t.url, `mutation { createSettingPreset(input: { kind: "layout", name: "${name}", payload: {} }) { id } }`, {}, bearer(user));
    expect(inline.body.errors![0]).toMatchObject(asGraphqlError(rest.body));
    expect(await presets()).not.toContain(name);
  });

  test('createSettingPreset: exactly 100 characters, or 100 astral characters (200 UTF-16 units), is accepted', async () => {
    for (const name of ['q'.repeat(100), '\u{1F600}'.repeat(100)]) {
      const g = await gql(t.url, createPreset, { i: { kind: 'layout', name, payload: {} } }, bearer(user));
      expect(g.body.errors).toBeUndefined();
      expect((g.body.data as { createSettingPreset: { name: string } }).createSettingPreset.name).toBe(name);
    }
    const astral = '\u{1F600}'.repeat(101);
    const rest = await api(t, 'POST', '/me/setting-presets', { token: user.accessToken, body: { kind: 'layout', name: astral, payload: {} } });
    await expectSameRefusal(rest, await gql(t.url, createPreset, { i: { kind: 'layout', name: astral, payload: {} } }, bearer(user)), maxLength('body.name', 100));
  });

  test('createOverlay: the schema declares its words (x-error-message), and GraphQL gives them with the same details', async () => {
    const name = 'o'.repeat(101);
    const rest = await api(t, 'POST', '/overlays', { token: user.accessToken, body: { name } });
    const graphql = await gql(t.url, 'mutation($n: String!) { createOverlay(input: { name: $n }) { id } }', { n: name }, bearer(user));
    await expectSameRefusal(rest, graphql, {
      error: 'VALIDATION_ERROR',
      message: 'name must be 1 to 100 characters',
      details: { fields: [{ field: 'name', message: 'name must be 1 to 100 characters' }] },
    });
  });

  test('createUserApiKey: a list item over 100 characters is named by its position, as REST names it', async () => {
    const permissions = ['events:read', 'x'.repeat(101)];
    const rest = await api(t, 'POST', '/api-keys', { token: user.accessToken, body: { label: 'long scope', permissions } });
    const graphql = await gql(t.url, 'mutation($i: CreateUserApiKeyInput!) { createUserApiKey(input: $i) { key } }', { i: { label: 'long scope', permissions } }, bearer(user));
    await expectSameRefusal(rest, graphql, maxLength('body.permissions.1', 100));
  });

  test('Query.sounds: a search over 100 characters gets the REST query refusal', async () => {
    const search = 's'.repeat(101);
    const rest = await api(t, 'GET', '/sounds', { token: user.accessToken, query: { search } });
    const graphql = await gql(t.url, 'query($s: String) { sounds(search: $s) { totalCount } }', { s: search }, bearer(user));
    await expectSameRefusal(rest, graphql, maxLength('query.search', 100));
  });
});
