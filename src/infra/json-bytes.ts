/**
 * The byte bound of stored free-form JSON (event `raw`, overlay and widget settings, preset
 * payloads, sound waveforms): what a client sends as "any JSON" is stored and later read back in
 * pages, so each such member has a declared bound in bytes of UTF-8 JSON text.
 */

/** `value`'s JSON text when it takes at most `max` bytes as UTF-8; null when it takes more. */
export function jsonTextWithin(value: unknown, max: number): string | null {
  const text = JSON.stringify(value) ?? 'null';
  // UTF-8 takes at most 3 bytes per UTF-16 unit: most texts need no count.
  return text.length * 3 > max && Buffer.byteLength(text) > max ? null : text;
}

/** The message of a member past its bound, one wording for every such member. */
export const jsonTooLarge = (field: string, max: number) => `${field} must be at most ${max} bytes as JSON`;

/**
 * JSON text that is already the wire form of a value (a list the database rendered in the API's
 * names and formats, src/modules/events/repo.ts `textPage`): the REST router splices it into an
 * answer as it is, for operations that declare it (src/http/rest.ts `jsonText`), instead of
 * serialising a value. Frozen, so a kept one (src/infra/kept.ts) is immutable all the way down.
 */
export class JsonText {
  constructor(readonly text: string) {
    Object.freeze(this);
  }
}
