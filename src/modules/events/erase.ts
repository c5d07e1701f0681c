/**
 * Privacy erasure of event payloads: an event row stays (counts, history, the
 * account's own record of what happened), but the identifiers of the erased person in its opaque
 * `raw` payload are set to null. Owns the reading of "who a payload names", nothing else.
 *
 * A payload names people through groups of keys sharing a prefix: `user_id`, `user_name`,
 * `display_name` (the actor), `gifter_user_id`/`gifter_user_name`, `recipient_user_id`/
 * `recipient_display_name`, `fromBroadcasterUserLogin`... (snake or camel case). A group is the
 * subject's when its id equals the subject's platform user id, or one of its logins equals a login
 * the subject was seen with (case-insensitive). Every key of that group is set to null, and so is
 * the `message` beside an actor group (the text a cheer or a tip carried). Nested objects and
 * arrays (a gift header's recipient list) are read the same way.
 */

/** Identifying key suffixes, normalised (lower case, no `_`), longest first so `userlogin` wins over `login`. */
const SUFFIXES = ['profileimageurl', 'displayname', 'userlogin', 'avatarurl', 'username', 'userid', 'login'] as const;
const ID_SUFFIXES: ReadonlySet<string> = new Set(['userid']);
const LOGIN_SUFFIXES: ReadonlySet<string> = new Set(['username', 'userlogin', 'login']);
/** Text the actor wrote, cleared with the actor's identity. */
const ACTOR_TEXT = new Set(['message', 'text']);

export interface ErasureSubject {
  readonly platformUserId: string;
  /** Lower case. */
  readonly logins: ReadonlySet<string>;
}

function split(key: string): { prefix: string; suffix: string } | null {
  const norm = key.toLowerCase().replace(/_/g, '');
  for (const suffix of SUFFIXES) if (norm.endsWith(suffix)) return { prefix: norm.slice(0, norm.length - suffix.length), suffix };
  return null;
}

const scalar = (value: unknown): string | null => (typeof value === 'string' ? value : typeof value === 'number' ? String(value) : null);

function matches(suffix: string, value: unknown, subject: ErasureSubject): boolean {
  const text = scalar(value);
  if (text === null) return false;
  if (ID_SUFFIXES.has(suffix)) return text === subject.platformUserId;
  return LOGIN_SUFFIXES.has(suffix) && subject.logins.has(text.toLowerCase());
}

/**
 * The payload without the subject's identifiers, or null when it names them nowhere (nothing to
 * write). The input is not changed.
 */
export function deidentify(raw: Record<string, unknown>, subject: ErasureSubject): Record<string, unknown> | null {
  let changed = false;
  const visit = (value: unknown): unknown => {
    if (Array.isArray(value)) return value.map(visit);
    if (value === null || typeof value !== 'object') return value;
    const object = value as Record<string, unknown>;
    const groups = new Map<string, string[]>();
    const hit = new Set<string>();
    for (const key of Object.keys(object)) {
      const parts = split(key);
      if (!parts) continue;
      const keys = groups.get(parts.prefix) ?? [];
      keys.push(key);
      groups.set(parts.prefix, keys);
      if (matches(parts.suffix, object[key], subject)) hit.add(parts.prefix);
    }
    const out: Record<string, unknown> = {};
    const cleared = new Set<string>();
    for (const prefix of hit) for (const key of groups.get(prefix)!) cleared.add(key);
    const actorHit = hit.has('');
    for (const [key, child] of Object.entries(object)) {
      if (cleared.has(key) || (actorHit && ACTOR_TEXT.has(key.toLowerCase()))) {
        if (child !== null) changed = true;
        out[key] = null;
      } else out[key] = visit(child);
    }
    return out;
  };
  const result = visit(raw) as Record<string, unknown>;
  return changed ? result : null;
}
