/**
 * Credential parsing: the eleven contexts' prefixes, lengths and transports (Part 1,
 * "Authentication"), and resolution to an AuthContext through one verifier per kind.
 *
 * Rules kept here and nowhere else:
 * - the `Authorization: Bearer` header is inspected first; a recognised prefix there is final;
 * - `?token=` is consulted only for the kinds allowed in the query, and a raw JWT only on the
 *   WebSocket upgrade;
 * - then the `svc-popout-token` cookie, which yields a popout session or nothing;
 * - on REST and GraphQL an unrecognised or invalid credential resolves to Anonymous; the upgrade
 *   reports it so the caller can fail closed with 401. On the upgrade "presented" means any
 *   `Authorization` header or non-empty `?token=`, recognised or not (`?token=garbage`,
 *   `Bearer lm_garbage`): only the absence of both opens an anonymous socket.
 * Also the two facts every module shares about stored credentials: the hash a token is kept under,
 * and the popout session cookie's name.
 */
import { createHash } from 'node:crypto';
import { ANONYMOUS, type AuthContext, type AuthContextKind } from './context';

/** The popout session cookie (Part 1, "Popout tokens and sessions"). */
export const POPOUT_COOKIE = 'svc-popout-token';

/** The only form in which a token is stored or compared: its SHA-256, hex. */
export function tokenHash(token: string): string {
  return createHash('sha256').update(token).digest('hex');
}

export type CredentialKind = Exclude<AuthContextKind, 'anonymous'>;

export interface CredentialFormat {
  kind: CredentialKind;
  prefix: string;
  /** Total length including the prefix; null for JWTs. */
  length: number | null;
  header: boolean;
  query: boolean;
}

const HEX64 = /^[0-9a-f]{64}$/;

/** Ordered so that longer prefixes win over `lm_` (the JWT form). */
export const credentialFormats: readonly CredentialFormat[] = [
  { kind: 'system_key', prefix: 'lm_sys_', length: 71, header: true, query: false },
  { kind: 'user_api_key', prefix: 'lm_usr_', length: 71, header: true, query: false },
  { kind: 'service_key', prefix: 'lm_svc_', length: 71, header: true, query: false },
  { kind: 'developer_api_key', prefix: 'lm_dev_', length: 71, header: true, query: false },
  { kind: 'popout', prefix: 'lm_pop_', length: 71, header: false, query: true },
  { kind: 'overlay', prefix: 'lm_overlay_', length: 75, header: true, query: true },
  { kind: 'shared_overlay', prefix: 'lm_share_', length: 73, header: true, query: true },
  { kind: 'extension', prefix: 'lm_ext_', length: 71, header: true, query: true },
  { kind: 'widget', prefix: 'lm_widget_', length: 74, header: true, query: true },
  { kind: 'jwt', prefix: 'lm_', length: null, header: true, query: true },
];

export interface ParsedCredential {
  format: CredentialFormat;
  /** The token as presented, prefix included (`lm_eyJ...` for JWTs). */
  token: string;
  /** Well-formed: prefix plus 64 lowercase hex, or `lm_` plus a three-part JWT. */
  wellFormed: boolean;
}

/** Recognises a token by prefix. Returns null when no prefix matches. */
export function parseCredential(token: string): ParsedCredential | null {
  for (const format of credentialFormats) {
    if (format.kind === 'jwt') {
      if (!token.startsWith('lm_eyJ')) continue;
      return { format, token, wellFormed: /^lm_eyJ[\w-]*\.[\w-]+\.[\w-]+$/.test(token) };
    }
    if (!token.startsWith(format.prefix)) continue;
    return { format, token, wellFormed: token.length === format.length && HEX64.test(token.slice(format.prefix.length)) };
  }
  return null;
}

export type Transport = 'http' | 'ws';

export interface VerifyFailure {
  code: 'UNAUTHORIZED' | 'TOKEN_EXPIRED';
  message: string;
}

/** One per credential kind; answers a context, or a failure when the credential is not valid. */
export type CredentialVerifier = (credential: ParsedCredential, transport: Transport) => Promise<AuthContext | VerifyFailure>;

export interface Resolution {
  context: AuthContext;
  /** Set when a credential was presented (recognised prefix) but did not verify. */
  failure: VerifyFailure | null;
}

export interface CredentialResolver {
  resolve(input: { authorization?: string | undefined; queryToken?: string | undefined; popoutCookie?: string | undefined; transport: Transport }): Promise<Resolution>;
}

function isFailure(value: AuthContext | VerifyFailure): value is VerifyFailure {
  return 'code' in value && !('kind' in value);
}

const INVALID: VerifyFailure = { code: 'UNAUTHORIZED', message: 'Invalid or expired credential' };

export function createCredentialResolver(verifiers: Partial<Record<CredentialKind, CredentialVerifier>>): CredentialResolver {
  async function verify(parsed: ParsedCredential, transport: Transport): Promise<Resolution> {
    const verifier = verifiers[parsed.format.kind];
    if (!parsed.wellFormed || !verifier) return { context: ANONYMOUS, failure: INVALID };
    const result = await verifier(parsed, transport);
    return isFailure(result) ? { context: ANONYMOUS, failure: result } : { context: result, failure: null };
  }

  return {
    async resolve({ authorization, queryToken, popoutCookie, transport }) {
      const bearer = /^Bearer\s+(\S+)\s*$/i.exec(authorization ?? '')?.[1];
      const fromHeader = bearer ? parseCredential(bearer) : null;
      // The upgrade fails closed on a credential it cannot read, instead of opening anonymously.
      if (transport === 'ws' && ((authorization !== undefined && !fromHeader) || (queryToken && !fromHeader && !parseCredential(queryToken)))) {
        return { context: ANONYMOUS, failure: INVALID };
      }
      if (fromHeader) {
        // A recognised prefix in the header is final, even when that kind is not sent there.
        return fromHeader.format.header ? verify(fromHeader, transport) : { context: ANONYMOUS, failure: INVALID };
      }
      const fromQuery = queryToken ? parseCredential(queryToken) : null;
      if (fromQuery) {
        const allowed = fromQuery.format.query && (fromQuery.format.kind !== 'jwt' || transport === 'ws');
        return allowed ? verify(fromQuery, transport) : { context: ANONYMOUS, failure: INVALID };
      }
      // Last: the popout session cookie, which may only ever yield a popout context.
      const fromCookie = popoutCookie ? parseCredential(popoutCookie) : null;
      if (fromCookie?.format.kind === 'jwt') {
        const resolved = await verify(fromCookie, transport);
        if (resolved.context.kind === 'popout') return resolved;
        return { context: ANONYMOUS, failure: resolved.failure ?? INVALID };
      }
      return { context: ANONYMOUS, failure: popoutCookie ? INVALID : null };
    },
  };
}
