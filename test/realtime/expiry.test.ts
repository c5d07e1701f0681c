/**
 * Part 2 "Authentication" 4: every heartbeat tick checks the session's credential for expiry; an
 * expired JWT or token ends the session with TOKEN_EXPIRED (close code 4001).
 */
import { createJwtService } from '../../src/auth/jwt';
import { useTestApp } from '../helpers/app';
import { api, devLogin } from '../helpers/users';
import { closeSocketsAfterEach, connect, within } from '../helpers/ws';

describe('credential expiry on open WebSocket sessions', () => {
  const t = useTestApp({ rate_limits: { enabled: false } }, { realtimeLimits: { heartbeatTickMs: 100 } });
  const opened = closeSocketsAfterEach();

  const open = async (token: string) => {
    const socket = await connect(`${t.wsUrl}?token=${encodeURIComponent(token)}`);
    opened.push(socket);
    expect((await socket.next()).type).toBe('welcome');
    return socket;
  };

  test('a ws JWT that expires mid-connection ends the session with TOKEN_EXPIRED and 4001', async () => {
    const user = await devLogin(t);
    const jwt = createJwtService(t.app.config.auth.jwt_secret);
    const { token } = await jwt.sign({ sub: user.userId, use: 'ws', ws_session: user.sessionId, account_id: user.accountId, account_permissions: ['events:read'] }, { ttlSeconds: 2 });
    const socket = await open(token);
    socket.send({ type: 'ping' });
    expect((await socket.next()).type).toBe('pong');
    const message = await socket.nextMatching((m) => m.type === 'error', 5000);
    expect(message).toMatchObject({ type: 'error', code: 'TOKEN_EXPIRED' });
    expect((await within(socket.closed, 3000, 'the close')).code).toBe(4001);
  });

  test('a token expiring at its expires_at (shared overlay) ends the session the same way', async () => {
    const owner = await devLogin(t);
    const { token } = await t.app.authStore.mint({ kind: 'shared_overlay', accountId: owner.accountId, subjectId: owner.accountId, expiresAt: new Date(Date.now() + 1500) });
    const socket = await open(token);
    const message = await socket.nextMatching((m) => m.type === 'error', 5000);
    expect(message).toMatchObject({ type: 'error', code: 'TOKEN_EXPIRED' });
    expect((await within(socket.closed, 3000, 'the close')).code).toBe(4001);
  });

  test('a credential that has not expired keeps its session open across ticks', async () => {
    const user = await devLogin(t);
    const minted = await api(t, 'POST', '/auth/ws-token', { token: user.accessToken });
    const socket = await open(minted.body.data.ws_token);
    await new Promise((r) => setTimeout(r, 500)); // five ticks
    socket.send({ type: 'ping' });
    expect((await socket.next()).type).toBe('pong');
  });
});
