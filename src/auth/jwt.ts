/**
 * JWTs (jose, HS256 over `auth.jwt_secret`), always presented with the `lm_` prefix. Owns the
 * claim names and the use tags of Part 1 ("JWT"): `access` (REST, GraphQL, WebSocket), `ws` (the
 * /v1/ws upgrade only), `refresh` (POST /v1/auth/refresh only). A token without `exp` is refused on
 * every transport: nothing would ever end it. Must not look up sessions or members: verifiers.ts
 * decides what a verified token is worth. The permission claims travel as readable arrays with
 * family wildcards (permission-claims.ts); sign writes them so and verify expands them, so callers
 * see literal string lists.
 */
import { randomUUID } from 'node:crypto';
import { SignJWT, errors as joseErrors, jwtVerify } from 'jose';
import { keptCache } from '../infra/kept';
import { BEYOND_P1_CLAIM, PERMISSION_CLAIMS, decodeClaim, encodeClaims } from './permission-claims';

export type JwtUse = 'access' | 'ws' | 'refresh';

export interface JwtClaims {
  /** The user. */
  sub: string;
  use: JwtUse;
  /** Session row (access and refresh tokens of a login session; never on `ws` tokens). */
  session_id?: string;
  /**
   * The login session a `ws` token was minted from. Deliberately not `session_id` (Part 1: a ws
   * JWT has no session id), so it stays useless on REST and GraphQL; the upgrade refuses it once
   * that session is revoked, and revoking the session closes the sockets it opened.
   */
  ws_session?: string;
  /** The personal API key (its hash, the context's credentialId) a `ws` token was minted with. */
  ws_key?: string;
  account_id?: string | null;
  account_permissions?: string[];
  admin_permissions?: string[];
  user_permissions?: string[];
  /** `popout` for popout sessions and their WebSocket tokens. */
  ctx?: 'user' | 'popout';
  /** The popout token a popout session was exchanged from. */
  popout_token_id?: string;
  jti?: string;
  exp?: number;
  iat?: number;
}

export const JWT_PREFIX = 'lm_';
/**
 * Tokens verified lately, with their claims, each kept until its own `exp`: a client presents the
 * same token on every request, and the signature check of identical bytes cannot come out
 * otherwise. What the token is worth (its session, its grants) is still decided per request.
 */
const VERIFIED_KEPT = 10_000;
const ISSUER = 'creator-backend';

export type JwtVerifyResult = { ok: true; claims: JwtClaims } | { ok: false; expired: boolean };

export interface JwtService {
  /** Signs `claims` for `ttlSeconds` (or until `expiresAt`); returns the `lm_`-prefixed token and its expiry. */
  sign(claims: Omit<JwtClaims, 'exp' | 'iat'>, lifetime: { ttlSeconds: number } | { expiresAt: Date }): Promise<{ token: string; expiresAt: Date }>;
  verify(token: string): Promise<JwtVerifyResult>;
}

/** Kept claims are shared by the requests that present the token: nobody may change them. */
function deepFreeze<T extends object>(value: T): T {
  for (const member of Object.values(value)) if (typeof member === 'object' && member !== null) deepFreeze(member as object);
  return Object.freeze(value);
}

export function createJwtService(secret: string): JwtService {
  const key = new TextEncoder().encode(secret);
  // Under the kept-bytes budget too (src/infra/kept.ts): a token and its claims, a few KB each.
  const verified = keptCache<string, { ok: true; claims: JwtClaims }>({ max: VERIFIED_KEPT, ttlAutopurge: false, sizeOf: (_value, token) => 256 + 3 * token.length });
  return {
    async sign(claims, lifetime) {
      // One clock reading for iat and exp: read twice, a second boundary between them shortened the lifetime by one.
      const issuedAt = Math.floor(Date.now() / 1000);
      const expiresAt = 'expiresAt' in lifetime ? lifetime.expiresAt : new Date((issuedAt + lifetime.ttlSeconds) * 1000);
      const payload: Record<string, unknown> = { ...claims };
      Object.assign(payload, encodeClaims(claims));
      const jwt = await new SignJWT(payload)
        .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
        .setIssuer(ISSUER)
        .setIssuedAt(issuedAt)
        .setJti(claims.jti ?? randomUUID())
        .setExpirationTime(Math.floor(expiresAt.getTime() / 1000))
        .sign(key);
      return { token: `${JWT_PREFIX}${jwt}`, expiresAt };
    },
    async verify(token) {
      if (!token.startsWith(JWT_PREFIX)) return { ok: false, expired: false };
      const known = verified.get(token);
      if (known) return known;
      try {
        const { payload } = await jwtVerify(token.slice(JWT_PREFIX.length), key, { issuer: ISSUER, algorithms: ['HS256'], requiredClaims: ['exp'] });
        const claims = { ...payload } as unknown as JwtClaims;
        for (const name of PERMISSION_CLAIMS) if (payload[name] !== undefined) claims[name] = decodeClaim(name, payload);
        delete (claims as unknown as Record<string, unknown>)[BEYOND_P1_CLAIM];
        if (typeof claims.sub !== 'string' || !['access', 'ws', 'refresh'].includes(claims.use)) return { ok: false, expired: false };
        const result = { ok: true as const, claims: deepFreeze(claims) };
        // Kept until the second jose's own check would first call it expired.
        const ttl = claims.exp! * 1000 - Date.now();
        if (ttl > 0) verified.set(token, result, { ttl });
        return result;
      } catch (error) {
        return { ok: false, expired: error instanceof joseErrors.JWTExpired };
      }
    },
  };
}
