/**
 * Request-header size: an access JWT stays small whatever its holder's grants
 * (the permission claims are compactly encoded), every documented query at its longest fits beside
 * it under `http.max_header_bytes`, and a request past the limit gets the declared 431
 * HEADERS_TOO_LARGE JSON body, its connection closed, while the process keeps serving. Any other
 * request Node's parser refuses gets 400 BAD_REQUEST as JSON.
 */
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import { connect } from 'node:net';
import { openapiDocument } from '../../generated/openapi-document';
import { PERMISSION_CLAIMS, PREVIOUS_RELEASE_READS_ARRAYS } from '../../src/auth/permission-claims';
import { useTestApp } from '../helpers/app';
import { api, devLogin, type LoggedIn } from '../helpers/users';

const operatorEmail = `ops-${randomUUID()}@example.test`;

interface Schema {
  type?: string;
  maxLength?: number;
  maxItems?: number;
  maximum?: number;
  enum?: unknown[];
  format?: string;
  items?: Schema;
}
interface Parameter {
  name: string;
  in: string;
  schema?: Schema;
  $ref?: string;
}
const doc = openapiDocument as unknown as {
  paths: Record<string, Record<string, { operationId?: string; parameters?: Parameter[]; responses?: Record<string, unknown> }>>;
  components: { parameters: Record<string, Parameter> };
};
const METHODS = ['get', 'post', 'put', 'patch', 'delete'];

/** Percent-encoding every character (ASCII): three bytes each. */
const encodedLength = (chars: number) => chars * 3;

/** The longest value the schema admits, in characters. */
function longest(schema: Schema): number {
  if (schema.enum) return Math.max(...schema.enum.map((v) => String(v).length));
  if (schema.type === 'integer' || schema.type === 'number') return String(schema.maximum ?? Number.MAX_SAFE_INTEGER).length + 1;
  if (schema.type === 'boolean') return 5;
  if (schema.format === 'uuid') return 36;
  if (schema.format === 'date-time') return 35;
  if (schema.maxLength !== undefined) return schema.maxLength;
  throw new Error(`unbounded query value: ${JSON.stringify(schema)}`);
}

/** Every operation with the length of its longest documented request target. */
function longestTargets(): { operation: string; bytes: number }[] {
  const out: { operation: string; bytes: number }[] = [];
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const method of METHODS) {
      const op = item[method];
      if (!op) continue;
      let bytes = `/v1${path}`.length + path.split('{').length * 40;
      for (const raw of op.parameters ?? []) {
        const p = raw.$ref ? doc.components.parameters[raw.$ref.split('/').pop()!]! : raw;
        // The credential travels in the header here (the request under test carries a JWT).
        if (p.in !== 'query' || p.name === 'token') continue;
        const schema = p.schema ?? {};
        const one = (s: Schema) => encodedLength(p.name.length) + 1 + encodedLength(longest(s)) + 1;
        bytes += schema.type === 'array' ? (schema.maxItems ?? 100) * one(schema.items ?? {}) : one(schema);
      }
      out.push({ operation: `${method.toUpperCase()} ${path}`, bytes });
    }
  }
  return out.sort((a, b) => b.bytes - a.bytes);
}

/** A raw GET with the given headers; answers status, headers and the JSON body. */
function rawGet(url: string, path: string, headers: Record<string, string>) {
  return new Promise<{ status: number; headers: http.IncomingHttpHeaders; body: unknown }>((resolve, reject) => {
    const req = http.get(`${url}${path}`, { headers, agent: false }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (text += chunk));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: text ? (JSON.parse(text) as unknown) : null }));
    });
    req.on('error', reject);
  });
}

describe('request header size', () => {
  const t = useTestApp({ auth: { bootstrap_admins: [operatorEmail] } });
  let ops: LoggedIn;

  beforeAll(async () => {
    // An account owner who is also a super-admin operator: the most grants a token can carry.
    ops = await devLogin(t, operatorEmail);
  });

  test('the access token of an owner who is also an operator is compact, and still carries every grant', async () => {
    expect(ops.accessToken.length).toBeLessThan(2048);
    const payload = JSON.parse(Buffer.from(ops.accessToken.slice(3).split('.')[1]!, 'base64url').toString('utf8')) as Record<string, unknown>;
    if (PREVIOUS_RELEASE_READS_ARRAYS) {
      // Readable arrays of permission strings, whole families as their wildcard.
      for (const name of PERMISSION_CLAIMS) expect(payload[name]).toEqual(expect.arrayContaining([expect.stringMatching(/^[\w*-]+:[\w*-]+$/)]));
      expect(payload.account_permissions).toEqual(['*:*']);
      expect(payload.admin_permissions).toEqual(expect.arrayContaining(['admin-roles:*', 'users:*', 'audit:read']));
      expect(payload.admin_permissions).not.toContain('audit:*');
    } else {
      // The previous release's bitmaps while it may serve beside this one (src/auth/permission-claims.ts).
      for (const name of PERMISSION_CLAIMS) expect(payload[name]).toEqual(expect.stringMatching(/^p1\.QbWmM2Pg\./));
    }
    const perms = await api(t, 'GET', '/tokens/me', { token: ops.accessToken });
    expect(perms.status).toBe(200);
    const data = perms.body.data as { permissions: string[]; admin_permissions: string[] };
    expect(data.permissions.length).toBeGreaterThan(100);
    expect(data.admin_permissions).toEqual(expect.arrayContaining(['admin:access', 'admin-roles:edit', 'users:delete']));
    expect((await api(t, 'GET', '/admin/admin-roles', { token: ops.accessToken })).status).toBe(200);
  });

  test('every documented request at its longest fits under the limit beside that token', () => {
    const limit = t.app.config.http.max_header_bytes;
    const otherHeaders = 1024; // host, user agent, accept, content type, cookies of a browser
    const headerBytes = `Authorization: Bearer ${ops.accessToken}\r\n`.length + otherHeaders;
    const targets = longestTargets();
    expect(targets.length).toBeGreaterThan(100);
    const over = targets.filter((x) => `GET ${'x'.repeat(x.bytes)} HTTP/1.1\r\n`.length + headerBytes > limit);
    expect(over).toEqual([]);
  });

  test('the longest documented requests, sent for real, are answered by their routes (not 431)', async () => {
    const [first, second] = longestTargets();
    // The longest: a provider's redirect back to the sign-in callback, every parameter at its maximum.
    expect(first!.operation).toBe('GET /auth/callback/{provider}');
    const callbackQuery = Object.entries({ code: 4000, state: 1000, iss: 2000, scope: 4000, session_state: 1000, error: 200, error_description: 2000, error_uri: 2000 })
      .map(([name, length]) => `${name}=${'%41'.repeat(length)}`)
      .join('&');
    const callback = await rawGet(t.url, `/v1/auth/callback/nowhere?${callbackQuery}`, { 'user-agent': 'x'.repeat(500) });
    expect(callback.status).not.toBe(431);
    expect((callback.body as { error?: string } | null)?.error).not.toBe('HEADERS_TOO_LARGE');
    // The longest a signed-in caller sends: chat history.
    expect(second!.operation).toBe('GET /chat/history');
    // `search` at its documented maximum (10,000 characters), every character percent-encoded.
    const search = '%2C'.repeat(10_000);
    const res = await rawGet(t.url, `/v1/chat/history?search=${search}&platform_user_id=${'%41'.repeat(200)}&live_chat_id=${'%41'.repeat(200)}`, {
      authorization: `Bearer ${ops.accessToken}`,
      'user-agent': 'x'.repeat(500),
    });
    // Commas only: no keyword, so the route answers the (empty) first page.
    expect(res.status).toBe(200);
    expect((res.body as { data: unknown[] }).data).toEqual([]);
    const ok = await rawGet(t.url, `/v1/chat/history?search=${'%61'.repeat(100)}&from=2020-01-01T00:00:00Z`, { authorization: `Bearer ${ops.accessToken}` });
    expect(ok.status).toBe(200);
  });

  test('past the limit: 431 HEADERS_TOO_LARGE as JSON, connection closed, the process keeps serving', async () => {
    const limit = t.app.config.http.max_header_bytes;
    const res = await rawGet(t.url, `/v1/tokens/me?x=${'a'.repeat(limit)}`, { authorization: `Bearer ${ops.accessToken}` });
    expect(res.status).toBe(431);
    expect(res.headers.connection).toBe('close');
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    expect(res.body).toEqual({ error: 'HEADERS_TOO_LARGE', message: 'Request line and headers are too large' });
    const header = await rawGet(t.url, '/v1/tokens/me', { authorization: `Bearer ${ops.accessToken}`, 'x-filler': 'b'.repeat(limit) });
    expect(header.status).toBe(431);
    const after = await api(t, 'GET', '/tokens/me', { token: ops.accessToken });
    expect(after.status).toBe(200);
  });

  test('a request the HTTP parser refuses gets 400 BAD_REQUEST as JSON', async () => {
    const url = new URL(t.url);
    const reply = await new Promise<string>((resolve, reject) => {
      const socket = connect(Number(url.port), url.hostname, () => socket.write('GET /v1/health HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n'));
      let text = '';
      socket.setEncoding('utf8');
      socket.on('data', (chunk: string) => (text += chunk));
      socket.on('end', () => resolve(text));
      socket.on('error', reject);
    });
    expect(reply).toMatch(/^HTTP\/1\.1 400 /);
    expect(reply).toMatch(/\r\nConnection: close\r\n/i);
    expect(JSON.parse(reply.slice(reply.indexOf('\r\n\r\n') + 4))).toEqual({ error: 'BAD_REQUEST', message: 'Malformed HTTP request' });
    expect((await api(t, 'GET', '/tokens/me', { token: ops.accessToken })).status).toBe(200);
  });
});
