/**
 * Secrets at rest (provider access and refresh tokens, mail bodies): AES-256-GCM through
 * node:crypto, one random 96-bit IV per value, the key id in the sealed text so keys rotate. A
 * database dump holds only sealed text.
 *
 * Each configured key has a state (docs/guides/production.md, "Key rotation on several nodes"): `sealing` (new values are sealed with
 * it; exactly one, by default the first listed), `decrypt-only` (opens what it sealed, seals
 * nothing: a new key is added so on every node before any node seals with it, and an old one
 * stays so until `npm run secrets:reseal` has rewritten its values), `retired` (opens nothing; a
 * value still sealed with it is named by the start-up check and the reseal command). A value that
 * cannot be opened throws SealedValueError, which names its key id.
 *
 * Without configured keys (development and test only: config refuses production), one key is
 * generated: kept in memory for a `memory://` data dir, else written once to
 * `<data_dir>/secrets.key` (mode 0600) and read back on later starts.
 */
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { Config, EncryptionKeyConfig } from '../config/config';

export interface SecretBox {
  /** `v1.<key id>.<iv>.<tag>.<ciphertext>` (base64url parts). */
  seal(plain: string): string;
  /** The plain text; throws SealedValueError on a value sealed by a key this node lacks (or retired), or changed since. */
  open(sealed: string): string;
  /** The id new values are sealed with. */
  readonly keyId: string;
  /** The ids this node opens values with (the sealing and decrypt-only keys). */
  readonly openKeyIds: readonly string[];
}

/** Why a sealed value could not be opened: the key id it names, and whether that key is missing here or the value was altered. */
export class SealedValueError extends Error {
  constructor(
    readonly keyId: string | null,
    readonly reason: 'unknown-key' | 'retired-key' | 'altered' | 'format',
  ) {
    super(
      reason === 'altered'
        ? `a sealed value under key ${keyId} does not open (altered, or another key under the same id)`
        : reason === 'format'
          ? 'a sealed value is not in the v1 format'
          : `a sealed value names key ${keyId}, which this node ${reason === 'retired-key' ? 'has retired' : 'does not have'} (secrets.encryption_keys)`,
    );
    this.name = 'SealedValueError';
  }
}

const VERSION = 'v1';

/** The key id a sealed value names (null when it is not in the v1 format). */
export function sealedKeyId(sealed: string): string | null {
  const [version, id] = sealed.split('.', 2);
  return version === VERSION && id ? id : null;
}

/** The key that seals: the one marked `sealing`, else the first listed that is not decrypt-only or retired. */
export function sealingKeyOf(keys: readonly EncryptionKeyConfig[]): EncryptionKeyConfig | undefined {
  return keys.find((k) => k.state === 'sealing') ?? keys.find((k) => k.state === undefined);
}

export function createSecretBox(keys: readonly EncryptionKeyConfig[]): SecretBox {
  if (keys.length === 0) throw new Error('createSecretBox: at least one key is required');
  const sealing = sealingKeyOf(keys);
  if (!sealing) throw new Error('secrets.encryption_keys: no key seals (mark one `state: sealing`)');
  const usable = keys.filter((k) => k.state !== 'retired');
  const retired = new Set(keys.filter((k) => k.state === 'retired').map((k) => k.id));
  const byId = new Map(usable.map((k) => [k.id, Buffer.from(k.key, 'base64')]));
  for (const [id, key] of byId) if (key.length !== 32) throw new Error(`secrets key ${id} is not 32 bytes`);
  const current = sealing.id;
  return {
    keyId: current,
    openKeyIds: [...byId.keys()],
    seal(plain) {
      const iv = randomBytes(12);
      const cipher = createCipheriv('aes-256-gcm', byId.get(current)!, iv);
      // The key id is authenticated too: a value cannot be moved under another key's name.
      cipher.setAAD(Buffer.from(`${VERSION}.${current}`));
      const body = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
      return [VERSION, current, iv.toString('base64url'), cipher.getAuthTag().toString('base64url'), body.toString('base64url')].join('.');
    },
    open(sealed) {
      const [version, id, iv, tag, body] = sealed.split('.');
      if (version !== VERSION || !id || iv === undefined || tag === undefined || body === undefined) throw new SealedValueError(id ?? null, 'format');
      const key = byId.get(id);
      if (!key) throw new SealedValueError(id, retired.has(id) ? 'retired-key' : 'unknown-key');
      try {
        const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64url'));
        decipher.setAAD(Buffer.from(`${VERSION}.${id}`));
        decipher.setAuthTag(Buffer.from(tag, 'base64url'));
        return Buffer.concat([decipher.update(Buffer.from(body, 'base64url')), decipher.final()]).toString('utf8');
      } catch {
        throw new SealedValueError(id, 'altered');
      }
    },
  };
}

/** The configured keys, or (outside production) the generated development key. */
export async function loadSecretBox(config: Readonly<Config>): Promise<SecretBox> {
  if (config.secrets.encryption_keys.length > 0) return createSecretBox(config.secrets.encryption_keys);
  if (config.env === 'production') throw new Error('secrets.encryption_keys: at least one key is required in production');
  if (config.data_dir.startsWith('memory://')) return createSecretBox([{ id: 'dev', key: randomBytes(32).toString('base64') }]);
  const file = path.join(config.data_dir, 'secrets.key');
  try {
    const saved = JSON.parse(await readFile(file, 'utf8')) as EncryptionKeyConfig;
    return createSecretBox([saved]);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  const generated = { id: 'dev', key: randomBytes(32).toString('base64') };
  await mkdir(config.data_dir, { recursive: true });
  // `wx`: two processes starting at once on one data dir must not overwrite each other's key.
  await writeFile(file, JSON.stringify(generated), { mode: 0o600, flag: 'wx' }).catch(async (error: NodeJS.ErrnoException) => {
    if (error.code !== 'EEXIST') throw error;
  });
  return createSecretBox([JSON.parse(await readFile(file, 'utf8')) as EncryptionKeyConfig]);
}
