/**
 * Hostile uploads: one multipart request could end the process (busboy hands an `undefined` field
 * name for an empty or missing one, and a throw inside its event handler was uncaught). Every
 * hostile multipart shape is sent to `POST /v1/sounds` as raw bytes on its own socket: each is
 * answered 400 with the spec's code and message, nothing is stored, and after each the process
 * still serves (health answers on a new connection) and no exception escaped to the process.
 */
import { connect as connectTcp } from 'node:net';
import { useTestApp } from '../helpers/app';
import { devLogin, type LoggedIn } from '../helpers/users';

interface RawAnswer {
  status: number | null;
  body: string;
}

/**
 * A POST written byte for byte on a fresh socket. `declaredLength` may exceed the bytes sent (with
 * `cut`, the socket then ends its side mid-body). Resolves with the answer, or status null when the
 * connection closed without one.
 */
function rawPost(base: string, path: string, headers: Record<string, string>, body: Buffer, options: { declaredLength?: number; cut?: boolean } = {}): Promise<RawAnswer> {
  const { hostname, port } = new URL(base);
  return new Promise((resolve, reject) => {
    const socket = connectTcp(Number(port), hostname);
    const chunks: Buffer[] = [];
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('error', () => undefined);
    socket.on('close', () => {
      const all = Buffer.concat(chunks).toString('latin1');
      const end = all.indexOf('\r\n\r\n');
      if (end < 0) return resolve({ status: null, body: '' });
      resolve({ status: Number(all.split(' ')[1]), body: Buffer.from(all.slice(end + 4), 'latin1').toString('utf8') });
    });
    const lines = Object.entries({ host: `${hostname}:${port}`, connection: 'close', 'content-length': String(options.declaredLength ?? body.length), ...headers }).map(([k, v]) => `${k}: ${v}\r\n`);
    socket.write(`POST ${path} HTTP/1.1\r\n${lines.join('')}\r\n`);
    socket.write(body, (error) => {
      if (error) reject(error);
      else if (options.cut) socket.end();
    });
  });
}

const CRLF = '\r\n';
const part = (boundary: string, disposition: string, content: string | Buffer, extraHeaders: string[] = []) =>
  Buffer.concat([Buffer.from(`--${boundary}${CRLF}${disposition ? `Content-Disposition: ${disposition}${CRLF}` : ''}${extraHeaders.map((h) => `${h}${CRLF}`).join('')}${CRLF}`), Buffer.from(content), Buffer.from(CRLF)]);
const closing = (boundary: string) => Buffer.from(`--${boundary}--${CRLF}`);
const form = (boundary: string, ...parts: Buffer[]) => Buffer.concat([...parts, closing(boundary)]);

const MALFORMED = { error: 'BAD_REQUEST', message: 'Malformed multipart body' };
const B = 'hostile-boundary';
const MULTIPART = `multipart/form-data; boundary=${B}`;

interface HostileCase {
  name: string;
  contentType?: string;
  body: Buffer;
  declaredLength?: number;
  cut?: boolean;
  /** The answer; null: the client left mid-body, so there is none to read. */
  expected: { error: string; message: string } | null;
}

const cases: HostileCase[] = [
  { name: 'a text part with an empty name', body: form(B, part(B, 'form-data; name=""', 'x')), expected: MALFORMED },
  { name: 'a text part without a name', body: form(B, part(B, 'form-data', 'x')), expected: MALFORMED },
  { name: 'a file part with an empty name', body: form(B, part(B, 'form-data; name=""; filename="a.wav"', 'RIFF')), expected: MALFORMED },
  { name: 'a file part without a name', body: form(B, part(B, 'form-data; filename="a.wav"', 'RIFF')), expected: MALFORMED },
  { name: 'a part without Content-Disposition', body: form(B, part(B, '', 'x', ['Content-Type: audio/wav'])), expected: { error: 'VALIDATION_ERROR', message: 'file is required' } },
  { name: 'the file part without a filename (a text field)', body: form(B, part(B, 'form-data; name="file"', 'RIFF....WAVE')), expected: { error: 'VALIDATION_ERROR', message: 'Unexpected form field: file' } },
  {
    name: 'the file part without a filename, typed as bytes',
    body: form(B, part(B, 'form-data; name="file"', 'not audio at all', ['Content-Type: application/octet-stream'])),
    expected: { error: 'VALIDATION_ERROR', message: 'Unsupported audio type: upload an MP3, WAV, OGG or FLAC file' },
  },
  { name: 'a broken RFC 5987 filename', body: form(B, part(B, "form-data; name=\"file\"; filename*=utf-8''%E0%A4%A", 'x')), expected: { error: 'VALIDATION_ERROR', message: 'file is required' } },
  { name: 'a huge part header (100 KB)', body: form(B, part(B, `form-data; name="file"; filename="${'a'.repeat(100_000)}.wav"`, 'RIFF')), expected: MALFORMED },
  { name: 'a huge header line of its own', body: form(B, part(B, 'form-data; name="file"; filename="a.wav"', 'RIFF', [`X-Padding: ${'p'.repeat(100_000)}`])), expected: MALFORMED },
  { name: 'many parts (1,000 name fields)', body: form(B, ...Array.from({ length: 1000 }, () => part(B, 'form-data; name="name"', 'n'))), expected: MALFORMED },
  { name: 'many parts (1,000 nameless parts)', body: form(B, ...Array.from({ length: 1000 }, () => part(B, 'form-data', 'n'))), expected: MALFORMED },
  { name: 'many file parts', body: form(B, ...Array.from({ length: 50 }, (_, i) => part(B, `form-data; name="file"; filename="${i}.wav"`, 'RIFF'))), expected: { error: 'VALIDATION_ERROR', message: 'Only one file may be uploaded' } },
  { name: 'a truncated body (no closing boundary)', body: Buffer.from(`--${B}${CRLF}Content-Disposition: form-data; name="file"; filename="a.wav"${CRLF}${CRLF}RIFF-and-then-it-stops`), expected: MALFORMED },
  { name: 'a body cut inside a part header', body: Buffer.from(`--${B}${CRLF}Content-Disposition: form-data; na`), expected: MALFORMED },
  { name: 'a body that ends after the first boundary line', body: Buffer.from(`--${B}${CRLF}`), expected: MALFORMED },
  { name: 'a client that leaves mid-body', body: Buffer.from(`--${B}${CRLF}Content-Disposition: form-data; name="file"; filename="a.wav"${CRLF}${CRLF}RIFF`), declaredLength: 100_000, cut: true, expected: null },
  { name: 'the wrong boundary', body: form('other-boundary', part('other-boundary', 'form-data; name="file"; filename="a.wav"', 'RIFF')), expected: MALFORMED },
  { name: 'no boundary', contentType: 'multipart/form-data', body: form(B, part(B, 'form-data; name="file"; filename="a.wav"', 'RIFF')), expected: MALFORMED },
  { name: 'an empty boundary', contentType: 'multipart/form-data; boundary=', body: form(B, part(B, 'form-data; name="file"; filename="a.wav"', 'RIFF')), expected: MALFORMED },
  { name: 'an empty body', body: Buffer.alloc(0), expected: MALFORMED },
  { name: 'binary garbage', body: Buffer.from(Array.from({ length: 4096 }, (_, i) => (i * 7919) % 256)), expected: MALFORMED },
];

describe('hostile multipart bodies on POST /v1/sounds', () => {
  const t = useTestApp();
  let owner: LoggedIn;
  const escaped: unknown[] = [];
  const tripwire = (error: unknown) => escaped.push(error);

  beforeAll(async () => {
    owner = await devLogin(t);
    // An exception that reaches the process would have ended it outside a test: recorded here.
    process.on('uncaughtException', tripwire);
    process.on('unhandledRejection', tripwire);
  });
  afterAll(() => {
    process.off('uncaughtException', tripwire);
    process.off('unhandledRejection', tripwire);
  });

  async function soundCount(): Promise<number> {
    const row = (await t.app.db.knex('sounds').where({ account_id: owner.accountId }).count({ n: '*' }).first()) as { n: string | number };
    return Number(row.n);
  }

  test.each(cases.map((c) => [c.name, c] as const))('%s: 400 with the spec code, nothing stored, the process still serves', async (_name, c) => {
    const before = await soundCount();
    const answer = await rawPost(t.url, '/v1/sounds', { authorization: `Bearer ${owner.accessToken}`, 'content-type': c.contentType ?? MULTIPART }, c.body, { declaredLength: c.declaredLength, cut: c.cut });
    if (c.expected) {
      expect({ status: answer.status, body: JSON.parse(answer.body) as unknown }).toMatchObject({ status: 400, body: c.expected });
    }
    // Still serving: a new connection is answered, and nothing escaped to the process.
    const health = await fetch(`${t.url}/v1/health`);
    expect(health.status).toBe(200);
    expect(escaped).toEqual([]);
    expect(await soundCount()).toBe(before);
  });

  test('a valid upload still works after all of them', async () => {
    const { wav } = await import('../fixtures/audio/make');
    const body = form(B, part(B, 'form-data; name="name"', 'after'), part(B, 'form-data; name="file"; filename="ok.wav"', wav(200), ['Content-Type: audio/wav']));
    const answer = await rawPost(t.url, '/v1/sounds', { authorization: `Bearer ${owner.accessToken}`, 'content-type': MULTIPART }, body);
    expect(answer.status).toBe(201);
    expect((JSON.parse(answer.body) as { data: { name: string } }).data.name).toBe('after');
    expect(escaped).toEqual([]);
  });
});
