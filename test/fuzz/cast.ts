/**
 * The fuzzer's cast: every credential kind the tests can mint, the live ids generated requests
 * may name, and the config the fuzzed service starts with. Credentials are made through the
 * real API where one exists (development logins, an invite into the owner's account, a popout
 * exchange, a WebSocket token) and in the credential store otherwise (API keys, overlay, shared
 * overlay, widget and extension tokens), as test/contract/harness.ts does.
 *
 * Generated requests name credentials and ids symbolically (`CredentialChoice`, `⟨ref:name⟩`);
 * the cast resolves them at send time. Destructive operations (dissolve the account, leave it,
 * remove a member, revoke a token) may break the cast: after every successful write the engine
 * asks `healthy()`, and a broken cast is rebuilt with fresh users, so later requests keep
 * reaching the handlers.
 */
import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { SignJWT, decodeJwt } from 'jose';
import type { AuthKind } from '../../generated/gates';
import { fieldGates } from '../../generated/graphql-schema';
import { routes } from '../../generated/rest';
import { gql, systemKey, type TestApp } from '../helpers/app';
import { api, devLogin, joinAccount, type LoggedIn } from '../helpers/users';
import { REF_PATTERN } from './values';

/** Every credential the fuzzer presents; `anonymous` presents none. */
export const credentialNames = [
  'anonymous',
  'ownerJwt',
  'memberJwt',
  'systemKeyAll',
  'systemKeyNone',
  'userApiKey',
  'serviceKey',
  'developerKey',
  'revokedApiKey',
  'popoutToken',
  'popoutSession',
  'overlay',
  'sharedOverlay',
  'extension',
  'widget',
  'refreshJwt',
  'wsJwt',
  'jwtWithoutExp',
  'expiredJwt',
  'jwtAlgNone',
  'jwtWrongSignature',
] as const;

export type CredentialName = (typeof credentialNames)[number];
export type Transport = 'header' | 'query' | 'cookie';

/** Which credential a request carries and how; `garbage` is a made-up token. */
export type CredentialChoice = { name: CredentialName; via: Transport } | { garbage: string; via: Transport };

const TOKEN_PREFIXES = ['lm_sys_', 'lm_usr_', 'lm_svc_', 'lm_dev_', 'lm_pop_', 'lm_overlay_', 'lm_share_', 'lm_ext_', 'lm_widget_', 'lm_eyJ', 'lm_', 'Bearer ', ''];

/** Made-up tokens: known prefixes with bodies of the wrong length or alphabet (header-safe bytes only). */
const garbageToken = fc
  .tuple(
    fc.constantFrom(...TOKEN_PREFIXES),
    fc.oneof(
      fc.stringMatching(/^[0-9a-f]{0,80}$/),
      fc.stringMatching(/^[A-Za-z0-9_.~+/=-]{0,120}$/),
      fc.constantFrom('0'.repeat(64), 'F'.repeat(64), 'eyJhbGciOiJIUzI1NiJ9.e30.', '...', 'x'.repeat(5000)),
    ),
  )
  .map(([p, body]) => `${p}${body}`);

export const credentialChoice: fc.Arbitrary<CredentialChoice> = fc.oneof(
  { arbitrary: fc.record({ name: fc.constantFrom(...credentialNames), via: fc.constantFrom<Transport>('header', 'header', 'header', 'query', 'cookie') }), weight: 9 },
  { arbitrary: fc.record({ name: fc.constantFrom<CredentialName>('ownerJwt', 'systemKeyAll', 'memberJwt'), via: fc.constant<Transport>('header') }), weight: 4 },
  { arbitrary: fc.record({ garbage: garbageToken, via: fc.constantFrom<Transport>('header', 'query', 'cookie') }), weight: 1 },
);

/**
 * Credentials that pass a gate's auth kind (permissions and features still decide), so that a
 * case meant to reach the handler is not refused at the door; `anyCredential` covers the rest.
 */
export function credentialFor(auth: AuthKind): fc.Arbitrary<CredentialChoice> {
  const header = (...names: CredentialName[]) => fc.constantFrom(...names).map((name): CredentialChoice => ({ name, via: 'header' }));
  switch (auth) {
    case 'public':
      return fc.oneof(fc.constant<CredentialChoice>({ name: 'anonymous', via: 'header' }), header('ownerJwt', 'systemKeyAll'));
    case 'first-party':
    case 'user':
      return header('ownerJwt', 'ownerJwt', 'memberJwt', 'userApiKey');
    case 'popout-session':
      return fc.constantFrom<CredentialChoice>({ name: 'popoutSession', via: 'cookie' }, { name: 'popoutSession', via: 'header' });
    case 'system-key':
      return header('systemKeyAll');
    case 'developer':
      return header('developerKey');
    default:
      return header('ownerJwt', 'ownerJwt', 'systemKeyAll', 'memberJwt', 'userApiKey', 'serviceKey');
  }
}

/** Mostly a credential that passes `auth`, sometimes any other (wrong kind, wrong transport, garbage). */
export const credentialForGate = (auth: AuthKind): fc.Arbitrary<CredentialChoice> =>
  fc.oneof({ arbitrary: credentialFor(auth), weight: 3 }, { arbitrary: credentialChoice, weight: 1 });

export function describeCredential(choice: CredentialChoice): string {
  return 'name' in choice ? `${choice.name} via ${choice.via}` : `garbage ${JSON.stringify(choice.garbage.slice(0, 80))} via ${choice.via}`;
}

// ------------------------------------------------------------------ config of the fuzzed service

const everyGrant = [...new Set([...routes.flatMap((r) => r.gate.permissions?.list ?? []), ...Object.values(fieldGates).flatMap((g) => g.permissions?.list ?? [])])].sort();
const keyAll = systemKey(`fuzz-all-${randomUUID()}`, everyGrant);
const keyNone = systemKey(`fuzz-none-${randomUUID()}`, []);

/**
 * Overrides for startTestApp: the two system keys, and no rate limits (one client address sends
 * thousands of requests; a budget would turn most of them into 429 before they reach a handler).
 */
export const fuzzAppOverrides: Record<string, unknown> = {
  auth: { system_keys: [keyAll.config, keyNone.config] },
  rate_limits: { enabled: false },
};

// ------------------------------------------------------------------ the cast

interface CastState {
  generation: number;
  tokens: Record<Exclude<CredentialName, 'anonymous'>, string>;
  refs: Record<string, string>;
  owner: LoggedIn;
  member: LoggedIn;
}

async function must<T>(label: string, p: Promise<{ status: number; body: T }>, ok = [200, 201]): Promise<T> {
  const res = await p;
  if (!ok.includes(res.status)) throw new Error(`fuzz cast: ${label} answered ${res.status} ${JSON.stringify(res.body).slice(0, 300)}`);
  return res.body;
}

async function signLike(secret: string, claims: Record<string, unknown>, options: { exp?: number; alg?: 'HS256' | 'none' }): Promise<string> {
  if (options.alg === 'none') {
    const enc = (o: unknown) => Buffer.from(JSON.stringify(o)).toString('base64url');
    return `lm_${enc({ alg: 'none', typ: 'JWT' })}.${enc(claims)}.`;
  }
  let jwt = new SignJWT(claims).setProtectedHeader({ alg: 'HS256', typ: 'JWT' });
  if (options.exp !== undefined) jwt = jwt.setExpirationTime(options.exp);
  return `lm_${await jwt.sign(new TextEncoder().encode(secret))}`;
}

async function build(t: TestApp, generation: number): Promise<CastState> {
  const tag = `g${generation}-${randomUUID().slice(0, 8)}`;
  const first = await devLogin(t, `fuzz-owner-${tag}@fuzz.test`, `Owner ${tag}`);
  await t.app.modules.accounts.assignAdminRole(first.userId, 'super-admin');
  const owner = await devLogin(t, first.email); // a new session whose claims carry the admin role
  const spare = await devLogin(t, first.email); // a session the fuzzer may refresh or revoke
  const accountId = owner.accountId!;
  const other = await must<{ data: { id: string } }>('create account', api(t, 'POST', '/accounts', { token: owner.accessToken, body: { name: `Other ${tag}` } }));

  const joined = await devLogin(t, `fuzz-member-${tag}@fuzz.test`);
  const member = await joinAccount(t, owner, joined, { role: 'moderator' });
  const roles = await must<{ data: { id: string; name: string }[] }>('roles', api(t, 'GET', '/account/roles', { token: owner.accessToken }));
  const memberRoleId = roles.data.find((r) => r.name === 'moderator')!.id;
  const custom = await must<{ data: { id: string } }>(
    'custom role',
    api(t, 'POST', '/account/roles', { token: owner.accessToken, body: { name: `fuzz-${tag}`, permissions: ['account:read', 'members:read'] } }),
  );

  const invitee = await devLogin(t, `fuzz-invitee-${tag}@fuzz.test`);
  const invite = await must<{ data: { id: string } }>('invite', api(t, 'POST', '/account/invites', { token: owner.accessToken, body: { user_id: invitee.userId, role: 'viewer' } }));
  const inbox = await must<{ data: { id: string }[] }>('notifications', api(t, 'GET', '/notifications', { token: invitee.accessToken }));

  const store = t.app.authStore;
  const by = { createdBy: owner.userId };
  const mint = async (input: Parameters<typeof store.mint>[0]) => store.mint(input);
  const popout = await mint({ kind: 'popout', accountId, userId: owner.userId, ...by, label: 'fuzz', permissions: ['events:read', 'chat:read'] });
  const popoutSpare = await mint({ kind: 'popout', accountId, userId: owner.userId, ...by, label: 'fuzz-spare', permissions: ['events:read'] });
  const exchanged = await must<{ data: { token: string } }>('popout exchange', api(t, 'POST', '/auth/popout/exchange', { body: { token: popout.token } }));
  const ws = await must<{ data: { ws_token: string } }>('ws token', api(t, 'POST', '/auth/ws-token', { token: owner.accessToken }));
  const revoked = await mint({ kind: 'user_api_key', accountId, userId: owner.userId, ...by, label: 'revoked', permissions: ['account:read'] });
  await store.revoke(revoked.row.id);

  const secret = t.app.config.auth.jwt_secret;
  const claims = decodeJwt(owner.accessToken.slice('lm_'.length)) as Record<string, unknown>;
  const { exp: _exp, ...withoutExp } = claims;
  const now = Math.floor(Date.now() / 1000);

  const tokens: CastState['tokens'] = {
    ownerJwt: owner.accessToken,
    memberJwt: member.accessToken,
    systemKeyAll: keyAll.key,
    systemKeyNone: keyNone.key,
    userApiKey: (
      await mint({ kind: 'user_api_key', accountId, userId: owner.userId, ...by, label: 'usr', permissions: ['account:read', 'members:read', 'roles:read', 'tokens:read', 'audit-log:read'] })
    ).token,
    serviceKey: (await mint({ kind: 'service_key', accountId, ...by, label: 'svc', permissions: ['account:read', 'members:read', 'roles:edit'] })).token,
    developerKey: (await mint({ kind: 'developer_api_key', subjectId: randomUUID(), ...by, label: 'dev', permissions: ['extension-dev:read'] })).token,
    revokedApiKey: revoked.token,
    popoutToken: popout.token,
    popoutSession: exchanged.data.token,
    overlay: (await mint({ kind: 'overlay', accountId, subjectId: randomUUID(), ...by })).token,
    sharedOverlay: (await mint({ kind: 'shared_overlay', accountId, subjectId: randomUUID(), ...by, expiresAt: new Date(Date.now() + 3_600_000) })).token,
    extension: (await mint({ kind: 'extension', accountId, subjectId: randomUUID(), extensionId: randomUUID(), expiresAt: new Date(Date.now() + 900_000) })).token,
    widget: (await mint({ kind: 'widget', accountId, subjectId: randomUUID(), ...by })).token,
    refreshJwt: owner.refreshToken,
    wsJwt: ws.data.ws_token,
    jwtWithoutExp: await signLike(secret, withoutExp, {}),
    expiredJwt: await signLike(secret, { ...withoutExp, iat: now - 7200 }, { exp: now - 3600 }),
    jwtAlgNone: await signLike(secret, claims, { alg: 'none' }),
    jwtWrongSignature: await signLike(`${secret}-not-it`, claims, { exp: now + 600 }),
  };
  const refs: Record<string, string> = {
    ownerUserId: owner.userId,
    memberUserId: member.userId,
    inviteeUserId: invitee.userId,
    accountId,
    otherAccountId: other.data.id,
    spareSessionId: spare.sessionId,
    popoutTokenId: popoutSpare.row.id,
    customRoleId: custom.data.id,
    memberRoleId,
    inviteId: invite.data.id,
    inviteeNotificationId: inbox.data[0]?.id ?? randomUUID(),
    spareRefreshToken: spare.refreshToken,
    popoutTokenRaw: popoutSpare.token,
    ownerAccessToken: owner.accessToken,
  };
  return { generation, tokens, refs, owner, member };
}

export interface Cast {
  readonly generation: number;
  /** Health probes and rebuilds so far (requests the fuzzer sends besides its cases). */
  readonly stats: { probes: number; rebuilds: number };
  /** Replaces every `⟨ref:name⟩` with the live value (unknown names stay as they are). */
  resolve(text: string): string;
  /** Headers and `?token=` value for a credential choice. */
  present(choice: CredentialChoice): { headers: Record<string, string>; queryToken?: string };
  /** Owner and member still reach their account; false after a destructive write took effect. */
  healthy(): Promise<boolean>;
  rebuild(): Promise<void>;
}

export async function createCast(t: TestApp): Promise<Cast> {
  let state = await build(t, 1);
  const stats = { probes: 0, rebuilds: 0 };
  const tokenOf = (choice: CredentialChoice): string | undefined => ('garbage' in choice ? choice.garbage : choice.name === 'anonymous' ? undefined : state.tokens[choice.name]);
  return {
    get generation() {
      return state.generation;
    },
    stats,
    resolve(text) {
      return text.replace(REF_PATTERN, (whole, plain?: string, encoded?: string) => state.refs[(plain ?? encoded)!] ?? whole);
    },
    present(choice) {
      const token = tokenOf(choice);
      const headers: Record<string, string> = {};
      if (token === undefined) return { headers };
      if (choice.via === 'query') return { headers, queryToken: token };
      if (choice.via === 'cookie') headers.cookie = `svc-popout-token=${encodeURIComponent(token)}`;
      else headers.authorization = token.startsWith('Bearer ') ? token : `Bearer ${token}`;
      return { headers };
    },
    async healthy() {
      stats.probes += 1;
      // The member's role (moderator) cannot read the account; its session still names it.
      const probe = async (user: LoggedIn, query: string) => {
        const res = await gql(t.url, query, {}, { authorization: `Bearer ${user.accessToken}` });
        return !res.body.errors && (res.body.data?.me as { activeAccountId?: string } | undefined)?.activeAccountId === state.refs.accountId;
      };
      return (await probe(state.owner, '{ me { activeAccountId } account { id } }')) && (await probe(state.member, '{ me { activeAccountId } }'));
    },
    async rebuild() {
      stats.rebuilds += 1;
      state = await build(t, state.generation + 1);
    },
  };
}
