/**
 * WebSocket upgrade limits: every upgrade draws from the caller's per-context
 * rate budget, the one HTTP requests draw from (over it: HTTP 429 RATE_LIMIT_EXCEEDED with
 * Retry-After before the switch); open sockets are capped per anonymous client address (derived
 * like Express's req.ip under `http.trust_proxy`) and per credential, system keys excepted; the
 * outbound queue is capped in bytes as well as in messages. Real sockets; every server message is
 * validated against spec/ws-protocol/ by the `connect` helper.
 */
import { randomBytes } from 'node:crypto';
import { systemKey, useTestApp, type TestApp } from '../helpers/app';
import { api, devLogin } from '../helpers/users';
import { closeSocketsAfterEach, connect, pauseReading, refusedUpgrade, within, type TestSocket } from '../helpers/ws';

const RATE_LIMITED = { error: 'RATE_LIMIT_EXCEEDED', message: 'Rate limit exceeded' };
const TOO_MANY = { error: 'RATE_LIMIT_EXCEEDED', message: 'Too many concurrent WebSocket connections' };

const opened = closeSocketsAfterEach();

/** A client address of its own for each test (TEST-NET-3), presented through X-Forwarded-For. */
const freshAddress = () => `203.0.113.${1 + (randomBytes(1)[0]! % 254)}`;
/** Every address this file used: a budget another test spent must never be drawn again. */
const usedAddresses = new Set<string>();
function newAddress(): string {
  let address = freshAddress();
  while (usedAddresses.has(address)) address = freshAddress();
  usedAddresses.add(address);
  return address;
}
const from = (address: string) => ({ 'x-forwarded-for': address });

async function session(url: string, headers: Record<string, string> = {}): Promise<TestSocket> {
  const socket = await connect(url, { headers });
  opened.push(socket);
  expect((await socket.next()).type).toBe('welcome');
  return socket;
}

/** Waits until the server has released a closed socket's slot (it counts on the TCP close). */
async function closeAndSettle(socket: TestSocket): Promise<void> {
  socket.close();
  await within(socket.closed, 3000, 'the close');
  await new Promise((r) => setTimeout(r, 100));
}

describe('upgrades draw from the per-context rate budget', () => {
  const sys = systemKey('upgrades', ['events:read']);
  const t = useTestApp({ rate_limits: { anonymous: 5, jwt: 4 }, auth: { system_keys: [sys.config] }, realtime: { max_sockets_per_address: 100, max_sockets_per_credential: 3 } });

  test('an anonymous upgrade flood gets 429 with Retry-After once the budget is spent', async () => {
    const address = newAddress();
    for (let i = 0; i < 5; i += 1) await closeAndSettle(await session(t.wsUrl, from(address)));
    const refused = await refusedUpgrade(t.wsUrl, { headers: from(address) });
    expect({ status: refused.status, body: refused.body }).toEqual({ status: 429, body: RATE_LIMITED });
    expect(Number(refused.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    expect(refused.headers['x-ratelimit-remaining']).toBe('0');
    // Another address has its own budget.
    await session(t.wsUrl, from(newAddress()));
  });

  test('an address already at 429 on HTTP is refused the upgrade, and upgrades spend the HTTP budget', async () => {
    const address = newAddress();
    for (let i = 0; i < 5; i += 1) expect((await api(t, 'GET', '/health', { headers: from(address) })).status).toBe(200);
    expect((await api(t, 'GET', '/health', { headers: from(address) })).status).toBe(429);
    expect((await refusedUpgrade(t.wsUrl, { headers: from(address) })).body).toEqual(RATE_LIMITED);

    const second = newAddress();
    for (let i = 0; i < 5; i += 1) await closeAndSettle(await session(t.wsUrl, from(second)));
    const http = await api(t, 'GET', '/health', { headers: from(second) });
    expect({ status: http.status, body: http.body }).toEqual({ status: 429, body: RATE_LIMITED });
  });

  test('a ws token is charged to its session budget, shared with that session on HTTP', async () => {
    const user = await devLogin(t);
    const minted = await api(t, 'POST', '/auth/ws-token', { token: user.accessToken }); // 1 of 4
    const token = minted.body.data.ws_token as string;
    const url = `${t.wsUrl}?token=${encodeURIComponent(token)}`;
    await closeAndSettle(await session(url, from(newAddress()))); // 2
    await closeAndSettle(await session(url, from(newAddress()))); // 3
    expect((await api(t, 'GET', '/tokens/me', { token: user.accessToken })).status).toBe(200); // 4
    // A fresh address does not help: the budget is the session's.
    expect((await refusedUpgrade(url, { headers: from(newAddress()) })).body).toEqual(RATE_LIMITED);
  });

  test('a refused credential is charged as anonymous: failing tokens cannot be tried without limit', async () => {
    const address = newAddress();
    const bogus = `${t.wsUrl}?token=lm_eyJhbGciOiJIUzI1NiJ9.e30.${'x'.repeat(43)}`;
    for (let i = 0; i < 5; i += 1) expect((await refusedUpgrade(bogus, { headers: from(address) })).status).toBe(401);
    expect((await refusedUpgrade(bogus, { headers: from(address) })).status).toBe(429);
  });

  test('system keys are neither rate limited nor capped', async () => {
    for (let i = 0; i < 8; i += 1) await session(t.wsUrl, { authorization: `Bearer ${sys.key}` });
  });
});

describe('open sockets are capped per anonymous address and per credential', () => {
  const t = useTestApp({ rate_limits: { enabled: false }, realtime: { max_sockets_per_address: 3, max_sockets_per_credential: 2 } });

  test('a fourth anonymous socket from one address gets 429; other addresses and freed slots are unaffected', async () => {
    const address = newAddress();
    const first = await session(t.wsUrl, from(address));
    await session(t.wsUrl, from(address));
    await session(t.wsUrl, from(address));
    const refused = await refusedUpgrade(t.wsUrl, { headers: from(address) });
    expect({ status: refused.status, body: refused.body }).toEqual({ status: 429, body: TOO_MANY });
    await session(t.wsUrl, from(newAddress()));
    await closeAndSettle(first);
    await session(t.wsUrl, from(address));
  });

  test('the cap per credential counts every ws token of one session together', async () => {
    const user = await devLogin(t);
    const mint = async () => (await api(t, 'POST', '/auth/ws-token', { token: user.accessToken })).body.data.ws_token as string;
    await session(`${t.wsUrl}?token=${encodeURIComponent(await mint())}`, from(newAddress()));
    await session(`${t.wsUrl}?token=${encodeURIComponent(await mint())}`, from(newAddress()));
    const refused = await refusedUpgrade(`${t.wsUrl}?token=${encodeURIComponent(await mint())}`, { headers: from(newAddress()) });
    expect({ status: refused.status, body: refused.body }).toEqual({ status: 429, body: TOO_MANY });
    const other = await devLogin(t);
    const otherToken = (await api(t, 'POST', '/auth/ws-token', { token: other.accessToken })).body.data.ws_token as string;
    await session(`${t.wsUrl}?token=${encodeURIComponent(otherToken)}`);
  });
});

describe('the client address follows http.trust_proxy', () => {
  const t = useTestApp({ rate_limits: { enabled: false }, http: { trust_proxy: false }, realtime: { max_sockets_per_address: 2 } });

  test('without a trusted proxy, X-Forwarded-For does not make a new address', async () => {
    await session(t.wsUrl, from(newAddress()));
    await session(t.wsUrl, from(newAddress()));
    expect((await refusedUpgrade(t.wsUrl, { headers: from(newAddress()) })).body).toEqual(TOO_MANY);
  });
});

describe('the outbound queue is capped in bytes', () => {
  const sys = systemKey('reader', ['events:read']);
  const t = useTestApp({ rate_limits: { enabled: false }, auth: { system_keys: [sys.config] }, realtime: { outbound_queue_bytes: 65536 } });

  async function reader(app: TestApp, accountId: string): Promise<TestSocket> {
    const socket = await session(app.wsUrl, { authorization: `Bearer ${sys.key}` });
    socket.send({ type: 'subscribe', channel: `events:${accountId}` });
    expect(await socket.next()).toEqual({ type: 'subscribed', channel: `events:${accountId}` });
    return socket;
  }

  test('a client that stops reading is disconnected (1013) once its queue holds more bytes than the cap, far below 256 messages', async () => {
    const owner = await devLogin(t);
    const slow = await reader(t, owner.accountId!);
    const resume = pauseReading(slow);
    // 48 messages of 512 KiB: more than the kernel buffers absorb, far fewer than the 256-message cap.
    const payload = JSON.stringify({ blob: 'x'.repeat(512 * 1024) });
    for (let i = 0; i < 48; i += 1) await t.app.bus.publish(`events:${owner.accountId}`, payload);
    resume();
    expect((await within(slow.closed, 15_000, 'the overflow close')).code).toBe(1013);
  });

  test('a client below the cap keeps its session', async () => {
    const owner = await devLogin(t);
    const socket = await reader(t, owner.accountId!);
    for (let i = 0; i < 5; i += 1) await t.app.bus.publish(`events:${owner.accountId}`, JSON.stringify({ n: i }));
    for (let i = 0; i < 5; i += 1) expect(await socket.next()).toEqual({ type: 'event', kind: 'broadcast', data: { n: i }, cursor: expect.any(String) });
  });
});
