import type { Gate } from '../../generated/gates';
import { ANONYMOUS, systemKeyContext, type AuthContext } from '../../src/auth/context';
import { createGateEnforcer } from '../../src/auth/gates';
import { AppError } from '../../src/errors';

const flags = new Map<string, boolean>([['feature:events', true], ['feature:sounds', false]]);
const gates = createGateEnforcer({ isEnabled: async (key) => flags.get(key) === true });
const system = (permissions: string[]) => systemKeyContext({ keyHash: 'h', label: 'k', permissions });
const user: AuthContext = { ...ANONYMOUS, kind: 'jwt', userId: 'u', accountId: 'a', permissions: new Set(['events:read']), adminPermissions: new Set(['admin:access']) };
const overlay: AuthContext = { ...ANONYMOUS, kind: 'overlay', accountId: 'a' };

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
    for (const auth of ['authenticated', 'first-party', 'system-key', 'popout-session', 'developer'] as const) {
      expect(await failure(gate({ auth }), ANONYMOUS)).toEqual({ code: 'UNAUTHORIZED', message: 'Authentication required' });
    }
  });

  test('first-party refuses tokens and system keys with FORBIDDEN', async () => {
    expect(await failure(gate({ auth: 'first-party' }), user)).toBeNull();
    expect((await failure(gate({ auth: 'first-party' }), overlay))?.code).toBe('FORBIDDEN');
    expect((await failure(gate({ auth: 'first-party' }), system([])))?.code).toBe('FORBIDDEN');
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
