/**
 * A real OpenID provider (oidc-provider, certified) on a loopback port for sign-in tests, with its
 * development login and consent pages, and a browser-like client that follows redirects, keeps
 * cookies per origin and submits the provider's forms.
 *
 * The provider's port is taken before the service under test starts (the service's config names
 * the issuer); its client is registered once the service's callback URLs are known (`register`).
 */
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { parse as parseCookie } from 'cookie';
import { SignJWT, decodeJwt, exportJWK, generateKeyPair, importJWK, type JWK } from 'jose';
import type * as OidcProviderModule from 'oidc-provider';

const importEsm = new Function('specifier', `return import(specifier); // ${randomUUID()}`) as (specifier: string) => Promise<typeof OidcProviderModule>;

export const CLIENT_ID = 'creator-backend';
export const CLIENT_SECRET = 'a-test-client-secret-that-is-long-enough-0123456789';

/** How the tampering token proxy rewrites the ID token it passes on. */
export type Tamper = { aud?: string; exp?: number; replaceWith?: string } | null;

export interface TestProvider {
  issuer: string;
  /** A token endpoint in front of the real one that re-signs the ID token with `tamper` applied. */
  tamperTokenEndpoint: string;
  tamper: Tamper;
  /** The last ID token the proxy passed on unchanged. */
  lastIdToken: string | null;
  register(redirectUris: string[]): Promise<void>;
  /** Stops answering (a provider that is down), and answers again. */
  down(): void;
  up(): void;
  stop(): Promise<void>;
}

/** `accessTokenTtl`: the provider's access token lifetime in seconds (default one hour); short ones exercise refresh. */
export async function startTestProvider(options: { accessTokenTtl?: number } = {}): Promise<TestProvider> {
  let handler: ((req: IncomingMessage, res: ServerResponse) => void) | null = null;
  let isDown = false;
  const server: Server = createServer((req, res) => {
    if (isDown) {
      req.socket.destroy();
      return;
    }
    if (handler) handler(req, res);
    else res.writeHead(503).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  const { privateKey } = await generateKeyPair('RS256', { extractable: true });
  const jwk: JWK = { ...(await exportJWK(privateKey)), kid: 'test-key', alg: 'RS256', use: 'sig' };
  const signingKey = await importJWK(jwk, 'RS256');

  const state: TestProvider = {
    issuer,
    tamperTokenEndpoint: '',
    tamper: null,
    lastIdToken: null,
    async register(redirectUris) {
      const { default: Provider } = await importEsm('oidc-provider');
      const provider = new Provider(issuer, {
        clients: [{ client_id: CLIENT_ID, client_secret: CLIENT_SECRET, redirect_uris: redirectUris, grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'] }],
        jwks: { keys: [jwk as never] },
        cookies: { keys: ['test-provider-cookie-key'] },
        claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name'] },
        features: { devInteractions: { enabled: true }, revocation: { enabled: true } },
        pkce: { required: () => true, methods: ['S256'] },
        issueRefreshToken: async () => true,
        ttl: { AccessToken: options.accessTokenTtl ?? 3600, AuthorizationCode: 60, IdToken: 3600, RefreshToken: 86400, Interaction: 3600, Session: 3600, Grant: 3600 },
        async findAccount(_ctx, id) {
          return { accountId: id, claims: async () => ({ sub: id, email: `${id}@example.test`, email_verified: true, name: `User ${id}` }) };
        },
      });
      handler = provider.callback() as unknown as typeof handler;
    },
    down() {
      isDown = true;
    },
    up() {
      isDown = false;
    },
    async stop() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      proxy.closeAllConnections();
      await new Promise<void>((resolve) => proxy.close(() => resolve()));
    },
  };

  // The tampering token proxy: forwards the client's request to the real token endpoint.
  const proxy = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      void (async () => {
        const answer = await fetch(`${issuer}/token`, {
          method: 'POST',
          headers: { 'content-type': String(req.headers['content-type']), authorization: String(req.headers.authorization ?? '') },
          body: Buffer.concat(chunks),
        });
        const body = (await answer.json()) as Record<string, unknown>;
        if (typeof body.id_token === 'string') {
          const original = body.id_token;
          if (state.tamper?.replaceWith) body.id_token = state.tamper.replaceWith;
          else if (state.tamper) {
            const claims = { ...decodeJwt(original), ...(state.tamper.aud ? { aud: state.tamper.aud } : {}), ...(state.tamper.exp ? { exp: state.tamper.exp } : {}) };
            body.id_token = await new SignJWT(claims).setProtectedHeader({ alg: 'RS256', kid: 'test-key' }).sign(signingKey);
          } else state.lastIdToken = original;
        }
        res.writeHead(answer.status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
      })().catch(() => res.writeHead(500).end());
    });
  });
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  state.tamperTokenEndpoint = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}/token`;
  return state;
}

/** A browser: cookies per origin, redirects followed by hand, HTML forms submitted. */
export class Browser {
  private readonly jar = new Map<string, Map<string, string>>();

  cookies(origin: string): Map<string, string> {
    let jar = this.jar.get(origin);
    if (!jar) this.jar.set(origin, (jar = new Map()));
    return jar;
  }

  /** One request with this browser's cookies for the URL's origin; `json` sends a JSON body (a page's `fetch`). */
  async request(url: string, init: { method?: string; body?: URLSearchParams; json?: unknown; headers?: Record<string, string> } = {}): Promise<Response> {
    const origin = new URL(url).origin;
    const cookie = [...this.cookies(origin)].map(([k, v]) => `${k}=${v}`).join('; ');
    const res = await fetch(url, {
      method: init.method ?? 'GET',
      redirect: 'manual',
      headers: {
        ...(cookie ? { cookie } : {}),
        ...(init.body ? { 'content-type': 'application/x-www-form-urlencoded' } : {}),
        ...(init.json !== undefined ? { 'content-type': 'application/json' } : {}),
        'user-agent': 'test-browser',
        ...init.headers,
      },
      ...(init.body ? { body: init.body.toString() } : init.json !== undefined ? { body: JSON.stringify(init.json) } : {}),
    });
    for (const line of res.headers.getSetCookie()) {
      const [pair, ...attributes] = line.split(';');
      const name = pair!.slice(0, pair!.indexOf('=')).trim();
      const value = pair!.slice(pair!.indexOf('=') + 1).trim();
      const expired = attributes.some((a) => /^\s*max-age=0\s*$/i.test(a)) || attributes.some((a) => /^\s*expires=/i.test(a) && new Date(a.split('=')[1]!).getTime() < Date.now());
      if (expired || value === '') this.cookies(origin).delete(name);
      else this.cookies(origin).set(name, parseCookie(`${name}=${value}`)[name]!);
    }
    return res;
  }

  /**
   * Follows redirects from `url`, logging in as `login` on the provider's login form and
   * accepting its consent form, until a redirect leaves for `stopAt` (not fetched). Answers that
   * final URL, or the response that was neither a redirect nor a provider form.
   */
  async navigate(url: string, options: { stopAt: string; login?: string; headers?: Record<string, string> }): Promise<{ url: string; response?: Response }> {
    let next: { url: string; method?: string; body?: URLSearchParams; headers?: Record<string, string> } = { url, ...(options.headers ? { headers: options.headers } : {}) };
    for (let hops = 0; hops < 20; hops += 1) {
      if (next.url.startsWith(options.stopAt)) return { url: next.url };
      const res = await this.request(next.url, next);
      const location = res.headers.get('location');
      if (res.status >= 300 && res.status < 400 && location) {
        next = { url: new URL(location, next.url).href };
        continue;
      }
      const html = res.status === 200 && (res.headers.get('content-type') ?? '').includes('text/html') ? await res.text() : null;
      // A POST form, attributes in any order (the provider's session-change page puts method first).
      const tag = html ? /<form\b[^>]*\bmethod="post"[^>]*>/i.exec(html)?.[0] : undefined;
      const form = tag ? /\baction="([^"]+)"/i.exec(tag) : null;
      if (!form || !html) return { url: next.url, response: res };
      const fields = new URLSearchParams();
      for (const input of html.matchAll(/<input[^>]*type="hidden"[^>]*name="([^"]+)"[^>]*value="([^"]*)"/gi)) fields.set(input[1]!, input[2]!);
      if (/name="login"/.test(html)) {
        fields.set('login', options.login ?? 'alice');
        fields.set('password', 'any');
      }
      next = { url: new URL(form[1]!, next.url).href, method: 'POST', body: fields };
    }
    throw new Error('too many redirects');
  }
}
