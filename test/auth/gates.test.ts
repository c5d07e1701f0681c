import type { Gate } from '../../generated/gates';
import { ANONYMOUS, systemKeyContext, type AuthContext } from '../../src/auth/context';
import { createGateEnforcer, refusalError, type AccountResolvers, type ChannelTarget } from '../../src/auth/gates';
import { AppError } from '../../src/errors';

const flags = new Map<string, boolean>([['feature:events', true], ['feature:sounds', false]]);
const gates = createGateEnforcer({ isEnabled: async (key) => flags.get(key) === true });
const system = (permissions: string[]) => systemKeyContext({ keyHash: 'h', label: 'k', permissions });
const user: AuthContext = { ...ANONYMOUS, kind: 'jwt', userId: 'u', accountId: 'a', permissions: new Set(['events:read']), adminPermissions: new Set(['admin:access']) };
const overlay: AuthContext = { ...ANONYMOUS, kind: 'overlay', accountId: 'a' };
const extension: AuthContext = { ...ANONYMOUS, kind: 'extension', accountId: 'a', permissions: new Set(['events:read']), binding: { installId: 'i1', extensionId: 'e1' } };

const gate = (g: Partial<Gate>): Gate => ({ auth: 'authenticated', permissions: null, feature: null, ...g });

async function failure(g: Gate, ctx: AuthContext): Promise<{ code: string; message: string } | null> {
  try {
    await gates.enforce(g, ctx);
    return null;
  } catch (error) {
    const e = error as AppError;
    return { code: e.code, message: e.message };
  }
}

describe('gate engine', () => {
  test('public lets everyone through', async () => {
    expect(await failure(gate({ auth: 'public' }), ANONYMOUS)).toBeNull();
  });

  test('anonymous gets UNAUTHORIZED "Authentication required" on every other kind', async () => {
    for (const auth of ['authenticated', 'first-party', 'system-key', 'popout-session', 'developer', 'extension'] as const) {
      expect(await failure(gate({ auth }), ANONYMOUS)).toEqual({ code: 'UNAUTHORIZED', message: 'Authentication required' });
    }
  });

  test('first-party refuses tokens and system keys with FORBIDDEN', async () => {
    expect(await failure(gate({ auth: 'first-party' }), user)).toBeNull();
    expect((await failure(gate({ auth: 'first-party' }), overlay))?.code).toBe('FORBIDDEN');
    expect((await failure(gate({ auth: 'first-party' }), system([])))?.code).toBe('FORBIDDEN');
  });

  test("an extension token holds its install's grants in account scope only; the extension kind admits it alone", async () => {
    const read = (scope: 'account' | 'admin' | 'user') => gate({ permissions: { mode: 'all', scope, list: ['events:read'] } });
    expect(await failure(read('account'), extension)).toBeNull();
    expect(await failure(read('admin'), extension)).toEqual({ code: 'FORBIDDEN', message: 'Missing permission: events:read' });
    expect(await failure(read('user'), extension)).toEqual({ code: 'FORBIDDEN', message: 'Missing permission: events:read' });
    expect(await failure(gate({ permissions: { mode: 'all', scope: 'account', list: ['events:create'] } }), extension)).toEqual({ code: 'FORBIDDEN', message: 'Missing permission: events:create' });
    expect(await failure(gate({ auth: 'first-party' }), extension)).toEqual({ code: 'FORBIDDEN', message: "This operation requires a user session or the user's own API key" });
    expect(await failure(gate({ auth: 'extension' }), extension)).toBeNull();
    for (const ctx of [user, overlay, system([])]) {
      expect(await failure(gate({ auth: 'extension' }), ctx)).toEqual({ code: 'FORBIDDEN', message: 'This operation requires an extension token' });
    }
  });

  test('system-key accepts only system keys', async () => {
    expect(await failure(gate({ auth: 'system-key' }), system([]))).toBeNull();
    expect((await failure(gate({ auth: 'system-key' }), user))?.code).toBe('FORBIDDEN');
  });

  test('permissions: all, any, scope; the message names the first missing permission', async () => {
    const all = gate({ permissions: { mode: 'all', scope: 'account', list: ['events:create', 'events:read'] } });
    expect(await failure(all, user)).toEqual({ code: 'FORBIDDEN', message: 'Missing permission: events:create' });
    const any = gate({ permissions: { mode: 'any', scope: 'account', list: ['events:create', 'events:read'] } });
    expect(await failure(any, user)).toBeNull();
    const admin = gate({ permissions: { mode: 'all', scope: 'admin', list: ['admin:access'] } });
    expect(await failure(admin, user)).toBeNull();
    const adminEvents = gate({ permissions: { mode: 'all', scope: 'admin', list: ['events:read'] } });
    expect((await failure(adminEvents, user))?.code).toBe('FORBIDDEN');
    expect(await failure(all, system(['events:*']))).toBeNull();
    expect((await failure(all, overlay))?.code).toBe('FORBIDDEN');
  });

  test('feature flags run after the permission check', async () => {
    const off = gate({ permissions: { mode: 'all', scope: 'account', list: ['sounds:read'] }, feature: 'feature:sounds' });
    expect((await failure(off, user))?.code).toBe('FORBIDDEN');
    expect(await failure(off, system(['sounds:read']))).toEqual({ code: 'FEATURE_DISABLED', message: 'Feature disabled: feature:sounds' });
    expect(await failure(gate({ feature: 'feature:events' }), user)).toBeNull();
    expect((await failure(gate({ feature: 'feature:unknown' }), user))?.code).toBe('FEATURE_DISABLED');
  });
});

describe('gate engine: resource grants', () => {
  // The checker a module supplies: user u holds widget-access:viewer on w1, and nothing else.
  const asked: [string, string | null][] = [];
  const granting = createGateEnforcer(
    { isEnabled: async (key) => flags.get(key) === true },
    {
      holds: async (grant, id, ctx) => {
        asked.push([grant, id]);
        return ctx.userId === 'u' && grant === 'widget-access:viewer' && (id === 'w1' || id === null);
      },
    },
  );
  const read = (on: 'id' | 'any', feature: string | null = null) =>
    gate({ permissions: { mode: 'all', scope: 'account', list: ['widgets:read'] }, resourceGrant: { grant: 'widget-access:viewer', on }, feature });
  const denied = { code: 'FORBIDDEN', message: 'Missing permission: widgets:read' };
  beforeEach(() => {
    asked.length = 0;
  });

  test('a held grant on the named resource stands in for the missing permission', async () => {
    expect(await granting.evaluate(read('id'), user, { id: 'w1' })).toBeNull();
    expect(asked).toEqual([['widget-access:viewer', 'w1']]);
  });

  test('without the grant the refusal is the permission\'s own, unchanged', async () => {
    expect(await granting.evaluate(read('id'), user, { id: 'w2' })).toEqual(denied);
    expect(await granting.evaluate(read('id'), { ...user, userId: 'other' }, { id: 'w1' })).toEqual(denied);
    // Without a grant declared, or without a checker, a target changes nothing.
    expect(await granting.evaluate(gate({ permissions: { mode: 'all', scope: 'account', list: ['widgets:read'] } }), user, { id: 'w1' })).toEqual(denied);
    expect(await gates.evaluate(read('id'), user, { id: 'w1' })).toEqual(denied);
  });

  test('an id that is not a string, or none, fails closed and never asks for "any"', async () => {
    for (const target of [undefined, {}, { id: 7 }, { id: null }, { id: ['w1'] }]) {
      expect(await granting.evaluate(read('id'), user, target)).toEqual(denied);
    }
    expect(asked).toEqual([]);
  });

  test('a list grant asks about any resource of the account', async () => {
    expect(await granting.evaluate(read('any'), user)).toBeNull();
    expect(asked).toEqual([['widget-access:viewer', null]]);
  });

  test('the checker is not asked when the permission is held, nor for refusals other than a missing permission', async () => {
    const holder: AuthContext = { ...user, permissions: new Set(['widgets:read']) };
    expect(await granting.evaluate(read('id'), holder, { id: 'w2' })).toBeNull();
    expect(await granting.evaluate(read('id'), ANONYMOUS, { id: 'w1' })).toEqual({ code: 'UNAUTHORIZED', message: 'Authentication required' });
    expect(await granting.evaluate(read('id'), { ...user, accountId: null }, { id: 'w1' })).toEqual({ code: 'UNAUTHORIZED', message: 'No active account' });
    expect(asked).toEqual([]);
  });

  test('the feature flag still runs after a granted permission check', async () => {
    expect(await granting.evaluate(read('id', 'feature:sounds'), user, { id: 'w1' })).toEqual({ code: 'FEATURE_DISABLED', message: expect.stringContaining('feature:sounds') });
  });
});

describe('gate engine: refusals each transport renders', () => {
  test('evaluate returns the refusal instead of throwing; enforce throws exactly that refusal', async () => {
    const g = gate({ permissions: { mode: 'all', scope: 'account', list: ['events:create'] } });
    const refusal = await gates.evaluate(g, user);
    expect(refusal).toEqual({ code: 'FORBIDDEN', message: 'Missing permission: events:create' });
    expect(await failure(g, user)).toEqual(refusal);
    expect(await gates.evaluate(gate({ auth: 'public' }), ANONYMOUS)).toBeNull();
    expect(await gates.evaluate(gate({ auth: 'popout-session' }), user)).toEqual({ code: 'FORBIDDEN', message: 'This operation requires a popout session' });
    expect(await gates.evaluate(gate({ feature: 'feature:sounds' }), user)).toEqual({ code: 'FEATURE_DISABLED', message: 'Feature disabled: feature:sounds' });
  });

  test('refusalError renders a refusal as the AppError REST and GraphQL throw', () => {
    const error = refusalError({ code: 'FORBIDDEN', message: 'This operation requires a system key' });
    expect(error).toBeInstanceOf(AppError);
    expect({ code: error.code, status: error.status, message: error.message }).toEqual({ code: 'FORBIDDEN', status: 403, message: 'This operation requires a system key' });
  });
});

describe('gate engine: WebSocket channel gates', () => {
  const member: AuthContext = { ...user, permissions: new Set(['events:read', 'chat:read', 'chat:write']), userPermissions: new Set(['watchlist:read']) };
  const target = (name: string, spec: Partial<ChannelTarget['spec']> & Pick<ChannelTarget['spec'], 'gate'>, params: Record<string, string> = {}): ChannelTarget => ({
    name,
    spec: { feature: null, broadcastPermission: null, ...spec },
    params,
  });
  const subscribe = (t: ChannelTarget, ctx: AuthContext, accountResolvers?: AccountResolvers) => gates.evaluateChannel(t, ctx, { action: 'subscribe', accountResolvers });
  const broadcast = (t: ChannelTarget, ctx: AuthContext) => gates.evaluateChannel(t, ctx, { action: 'broadcast' });
  const notAuthorized = (channel: string) => ({ code: 'UNAUTHORIZED', message: `Not authorized to subscribe to ${channel}` });

  test('Public admits everyone; Authenticated refuses only anonymous', async () => {
    expect(await subscribe(target('login-assignments:1', { gate: { kind: 'Public' } }), ANONYMOUS)).toBeNull();
    const auth = target('any:1', { gate: { kind: 'Authenticated' } });
    expect(await subscribe(auth, ANONYMOUS)).toEqual(notAuthorized('any:1'));
    expect(await subscribe(auth, overlay)).toBeNull();
  });

  test('PublicWhenFeature refuses with FEATURE_DISABLED naming its flag while the flag is off', async () => {
    const on = target('ideas:list', { gate: { kind: 'PublicWhenFeature', flag: 'feature:events' } });
    expect(await subscribe(on, ANONYMOUS)).toBeNull();
    const off = target('ideas:list', { gate: { kind: 'PublicWhenFeature', flag: 'feature:sounds' } });
    expect(await subscribe(off, ANONYMOUS)).toEqual({ code: 'FEATURE_DISABLED', message: 'Feature disabled: feature:sounds' });
  });

  test('Permission needs access to the account in the name and the permission; system keys reach every account', async () => {
    const events = (account: string) => target(`events:${account}`, { gate: { kind: 'Permission', permission: 'events:read' } }, { account_id: account });
    expect(await subscribe(events('a'), member)).toBeNull();
    expect(await subscribe(events('b'), member)).toEqual(notAuthorized('events:b'));
    expect(await subscribe(events('b'), system(['events:read']))).toBeNull();
    expect(await subscribe(events('b'), system(['chat:read']))).toEqual(notAuthorized('events:b'));
    expect(await subscribe(events('a'), overlay)).toEqual(notAuthorized('events:a'));
    expect(await subscribe(events('a'), ANONYMOUS)).toEqual(notAuthorized('events:a'));
  });

  test('AccountScoped resolves the owning account through the resolver of its placeholder; unresolvable fails closed', async () => {
    const presence = target('presence:chat:x', { gate: { kind: 'AccountScoped' } }, { resource_channel: 'chat:x' });
    const owners: AccountResolvers = { resource_channel: async ({ resource_channel }) => (resource_channel === 'chat:x' ? 'a' : null) };
    expect(await subscribe(presence, member, owners)).toBeNull();
    expect(await subscribe(presence, overlay, owners)).toBeNull();
    expect(await subscribe(presence, { ...member, accountId: 'b' }, owners)).toEqual(notAuthorized('presence:chat:x'));
    expect(await subscribe(presence, ANONYMOUS, owners)).toEqual(notAuthorized('presence:chat:x'));
    expect(await subscribe(presence, member)).toEqual(notAuthorized('presence:chat:x'));
    const unknown = target('presence:chat:y', { gate: { kind: 'AccountScoped' } }, { resource_channel: 'chat:y' });
    expect(await subscribe(unknown, member, owners)).toEqual(notAuthorized('presence:chat:y'));
  });

  test('UserPermission checks the user-scope grants', async () => {
    const watch = target('watch:1', { gate: { kind: 'UserPermission', permission: 'watchlist:read' } });
    expect(await subscribe(watch, member)).toBeNull();
    expect(await subscribe(watch, user)).toEqual(notAuthorized('watch:1'));
  });

  test('token-bound kinds without a binding module, and Unknown, always refuse', async () => {
    for (const kind of ['OverlayToken', 'WidgetToken', 'ExtensionOwner', 'Unknown'] as const) {
      expect(await subscribe(target('x:1', { gate: { kind } }), system(['events:*']))).toEqual(notAuthorized('x:1'));
    }
  });

  test('the permission gate runs before the channel feature flag', async () => {
    const sounds = (account: string) => target(`sounds:${account}`, { gate: { kind: 'AccountScoped' }, feature: 'feature:sounds' }, { account_id: account });
    expect(await subscribe(sounds('b'), member)).toEqual(notAuthorized('sounds:b'));
    expect(await subscribe(sounds('a'), member)).toEqual({ code: 'FEATURE_DISABLED', message: 'Feature disabled: feature:sounds' });
  });

  test('a broadcast passes the subscribe gate, then needs the write permission', async () => {
    const chat = target('chat:a', { gate: { kind: 'Permission', permission: 'chat:read' }, broadcastPermission: 'chat:write' }, { account_id: 'a' });
    expect(await broadcast(chat, member)).toBeNull();
    const reader: AuthContext = { ...member, permissions: new Set(['chat:read']) };
    expect(await broadcast(chat, reader)).toEqual({ code: 'UNAUTHORIZED', message: 'Not authorized to broadcast on chat:a' });
    expect(await broadcast(chat, ANONYMOUS)).toEqual(notAuthorized('chat:a'));
    const readOnly = target('history:a', { gate: { kind: 'Permission', permission: 'events:read' } }, { account_id: 'a' });
    expect(await subscribe(readOnly, member)).toBeNull();
    expect(await broadcast(readOnly, member)).toEqual({ code: 'UNAUTHORIZED', message: 'Not authorized to broadcast on history:a' });
  });
});
