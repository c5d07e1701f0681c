/**
 * The response writers (src/http/request.ts) over a real socket: a body of text in parts (a spliced
 * page) goes out with the bytes, Content-Length and weak ETag of its joined text, exactly as the
 * `etag` package and a string body would give them, answers 304 to its own tag, and sends no body
 * to HEAD.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import createETag from 'etag';
import { prepareJsonText, sendPreparedJson, type TextParts } from '../../src/http/request';

const cases: { name: string; parts: TextParts }[] = [
  { name: 'a spliced page', parts: ['{"data":', '[{"id":"e1","type":"follow","raw":{"name":"naïve ✓ 日本"}}]', ',"_meta":{"total":1}}'] },
  { name: 'an empty page', parts: ['{"data":', '[]', '}'] },
  { name: 'empty parts', parts: ['', '', ''] },
  { name: 'a long part', parts: ['{"data":', JSON.stringify(Array.from({ length: 2000 }, (_, i) => ({ i, text: `é${i}` }))), '}'] },
];

let server: http.Server;
let url: string;
let current: TextParts = [];

beforeAll(async () => {
  server = http.createServer((req, res) => sendPreparedJson(req, res, 200, prepareJsonText(current)));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
});

/** A request by node:http (fetch adds `Cache-Control: no-cache` to a conditional request, which no cache may answer 304). */
function ask(method: string, headers: Record<string, string> = {}): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method, headers }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

afterAll(async () => {
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

describe('a body of text in parts', () => {
  it.each(cases)('$name: the joined text, its length and its etag package tag', async ({ parts }) => {
    current = parts;
    const joined = parts.join('');
    const res = await fetch(url);
    expect(res.status).toBe(200);
    expect(Buffer.from(await res.arrayBuffer()).equals(Buffer.from(joined, 'utf8'))).toBe(true);
    expect(res.headers.get('content-length')).toBe(String(Buffer.byteLength(joined, 'utf8')));
    expect(res.headers.get('etag')).toBe(createETag(joined, { weak: true }));
    expect(res.headers.get('content-type')).toBe('application/json; charset=utf-8');
  });

  it('answers 304 to its own tag and no body to HEAD', async () => {
    current = cases[0]!.parts;
    const tag = createETag(current.join(''), { weak: true });
    expect(await ask('GET', { 'If-None-Match': tag })).toEqual({ status: 304, body: '' });
    expect((await ask('GET', { 'If-None-Match': 'W/"other"' })).status).toBe(200);
    const head = await fetch(url, { method: 'HEAD' });
    expect(head.status).toBe(200);
    expect(head.headers.get('content-length')).toBe(String(Buffer.byteLength(current.join(''), 'utf8')));
    expect(await head.text()).toBe('');
  });
});
