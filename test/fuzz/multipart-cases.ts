/**
 * Multipart bodies for the edge fuzzer: for every operation whose request body is
 * `multipart/form-data` in the OpenAPI document, valid forms (the declared parts, a small real
 * WAV as the binary part) and hostile ones: parts without a name or with an empty one, a binary
 * part without a filename, huge part headers, many parts, bodies cut short, wrong, missing or
 * empty boundaries, header injection in names and filenames, garbage. Bodies are latin1 text so
 * that every byte value goes out as itself.
 */
import fc from 'fast-check';
import { wav } from '../fixtures/audio/make';
import { deref, hostileString, type Schema } from './values';

export interface MultipartBody {
  text: string;
  contentType: string | null;
  encoding: 'latin1';
}

const CRLF = '\r\n';
const SMALL_WAV = wav(50).toString('latin1');

/** The `multipart/form-data` schema of an operation's request body, if it has one. */
export function multipartSchemaOf(op: Schema): Schema | undefined {
  const content = (deref(op.requestBody) as Schema | undefined)?.content as Record<string, Schema> | undefined;
  const node = content?.['multipart/form-data']?.schema;
  return node ? deref(node) : undefined;
}

interface Part {
  /** The whole Content-Disposition value, or null for none. */
  disposition: string | null;
  headers?: string[];
  content: string;
}

const render = (boundary: string, parts: Part[], close = true) =>
  parts.map((p) => `--${boundary}${CRLF}${p.disposition === null ? '' : `Content-Disposition: ${p.disposition}${CRLF}`}${(p.headers ?? []).map((h) => `${h}${CRLF}`).join('')}${CRLF}${p.content}${CRLF}`).join('') +
  (close ? `--${boundary}--${CRLF}` : '');

const boundaryArb = fc.oneof(fc.constant('fuzz-boundary'), fc.stringMatching(/^[A-Za-z0-9'()+_,./:=?-]{1,70}$/));
/** Latin1-only strings: what a part's text may hold byte for byte. */
const latin1 = (s: string) => s.replace(/[^\u0000-\u00ff]/g, '?');
const fieldText = fc.oneof(fc.string({ maxLength: 40 }), hostileString.filter((s) => s.length <= 300)).map(latin1);

function declaredParts(schema: Schema): { binary: string[]; text: string[] } {
  const props = (schema.properties ?? {}) as Record<string, unknown>;
  const binary = Object.keys(props).filter((k) => deref(props[k])?.format === 'binary');
  const text = Object.keys(props).filter((k) => !binary.includes(k));
  return { binary, text };
}

/** A form as a browser sends it: every binary part a small WAV with a filename, text parts sometimes. */
function validForm(schema: Schema): fc.Arbitrary<Part[]> {
  const { binary, text } = declaredParts(schema);
  return fc
    .tuple(fc.subarray(text), fc.array(fc.string({ minLength: 1, maxLength: 30 }).map(latin1), { minLength: text.length, maxLength: text.length }), fc.constantFrom('clip.wav', 'a b.wav', 'x'))
    .map(([chosen, values, filename]) => [
      ...chosen.map((name, i) => ({ disposition: `form-data; name="${name}"`, content: values[i] ?? 'x' })),
      ...binary.map((name) => ({ disposition: `form-data; name="${name}"; filename="${filename}"`, headers: ['Content-Type: audio/wav'], content: SMALL_WAV })),
    ]);
}

/** One hostile part among otherwise valid ones. */
function hostilePart(schema: Schema): fc.Arbitrary<Part> {
  const { binary, text } = declaredParts(schema);
  const names = [...binary, ...text, 'unexpected'];
  return fc.oneof(
    fc.constant<Part>({ disposition: 'form-data; name=""', content: 'x' }),
    fc.constant<Part>({ disposition: 'form-data', content: 'x' }),
    fc.constant<Part>({ disposition: 'form-data; name=""; filename="a.wav"', content: SMALL_WAV }),
    fc.constant<Part>({ disposition: 'form-data; filename="a.wav"', content: SMALL_WAV }),
    fc.constant<Part>({ disposition: null, content: 'x' }),
    fc.constant<Part>({ disposition: 'attachment; name="file"', content: SMALL_WAV }),
    fc.constantFrom(...names).map((name): Part => ({ disposition: `form-data; name="${name}"`, content: SMALL_WAV })),
    fc.constantFrom(...names).map((name): Part => ({ disposition: `form-data; name="${name}"`, headers: ['Content-Type: application/octet-stream'], content: 'not audio' })),
    fc.constantFrom(...names).map((name): Part => ({ disposition: `form-data; name="${name}"; filename="${'a'.repeat(20_000)}.wav"`, content: 'RIFF' })),
    fc.constantFrom(...names).map((name): Part => ({ disposition: `form-data; name="${name}"; filename="a.wav"`, headers: [`X-Pad: ${'p'.repeat(20_000)}`], content: 'RIFF' })),
    fc.constantFrom(...names).map((name): Part => ({ disposition: `form-data; name="${name}"; filename*=utf-8''%E0%A4%A`, content: 'x' })),
    fieldText.map((name): Part => ({ disposition: `form-data; name="${name}"`, content: 'x' })),
    fieldText.map((filename): Part => ({ disposition: `form-data; name="${binary[0] ?? 'file'}"; filename="${filename}"`, content: SMALL_WAV })),
    fc.tuple(fc.constantFrom(...names), fieldText).map(([name, value]): Part => ({ disposition: `form-data; name="${name}"`, content: value })),
    fc.constantFrom(...names).map((name): Part => ({ disposition: `form-data; name="${name}"; charset=bogus; =; ;;`, headers: ['Content-Transfer-Encoding: base64', 'Content-Type: ;;;'], content: '!!' })),
  );
}

/** A valid form, or one broken in one way: a hostile part, many parts, a cut, a boundary problem, garbage. */
export function multipartBody(schema: Schema): fc.Arbitrary<MultipartBody> {
  const valid = validForm(schema);
  const ok = (boundary: string, text: string): MultipartBody => ({ text, contentType: `multipart/form-data; boundary=${boundary}`, encoding: 'latin1' });
  return fc.oneof(
    { weight: 3, arbitrary: fc.tuple(boundaryArb, valid).map(([b, parts]) => ok(b, render(b, parts))) },
    {
      weight: 6,
      arbitrary: fc.tuple(boundaryArb, valid, hostilePart(schema), fc.nat()).map(([b, parts, bad, at]) => {
        const all = [...parts];
        all.splice(at % (all.length + 1), 0, bad);
        return ok(b, render(b, all));
      }),
    },
    { weight: 1, arbitrary: fc.tuple(boundaryArb, fc.integer({ min: 11, max: 400 }), fc.constantFrom('name', 'file', '')).map(([b, n, name]) => ok(b, render(b, Array.from({ length: n }, () => ({ disposition: name ? `form-data; name="${name}"` : 'form-data', content: 'n' }))))) },
    // Cut short anywhere.
    { weight: 2, arbitrary: fc.tuple(boundaryArb, valid, fc.nat()).map(([b, parts, at]) => { const text = render(b, parts); return ok(b, text.slice(0, at % text.length)); }) },
    // Boundary problems.
    { weight: 1, arbitrary: valid.map((parts) => ok('header-boundary', render('body-boundary', parts))) },
    { weight: 1, arbitrary: valid.map((parts): MultipartBody => ({ text: render('fuzz-boundary', parts), contentType: 'multipart/form-data', encoding: 'latin1' })) },
    { weight: 1, arbitrary: valid.map((parts): MultipartBody => ({ text: render('fuzz-boundary', parts), contentType: 'multipart/form-data; boundary=', encoding: 'latin1' })) },
    { weight: 1, arbitrary: valid.map((parts): MultipartBody => ({ text: render('x'.repeat(200), parts), contentType: `multipart/form-data; boundary=${'x'.repeat(200)}`, encoding: 'latin1' })) },
    { weight: 1, arbitrary: valid.map((parts): MultipartBody => ({ text: render('fuzz-boundary', parts), contentType: 'multipart/form-data; boundary="fuzz-boundary"; boundary=other', encoding: 'latin1' })) },
    { weight: 1, arbitrary: valid.map((parts): MultipartBody => ({ text: render('fuzz-boundary', parts), contentType: 'multipart/mixed; boundary=fuzz-boundary', encoding: 'latin1' })) },
    // Garbage and empty bodies.
    { weight: 1, arbitrary: fc.tuple(boundaryArb, fc.uint8Array({ maxLength: 2000 })).map(([b, bytes]) => ok(b, Buffer.from(bytes).toString('latin1'))) },
    { weight: 1, arbitrary: boundaryArb.map((b) => ok(b, '')) },
    { weight: 1, arbitrary: boundaryArb.map((b) => ok(b, `--${b}--${CRLF}`)) },
  );
}
