/**
 * Secrets at rest (provider access and refresh tokens): AES-256-GCM through node:crypto, one
 * random 96-bit IV per value, the key id in the sealed text so keys rotate (new writes use the
 * first configured key, reads the key the value names). A database dump holds only sealed text.
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
  /** The plain text; throws on a value sealed by an unknown key or changed since. */
  open(sealed: string): string;
  /** The id new values are sealed with. */
  readonly keyId: string;
}

const VERSION = 'v1';

export function createSecretBox(keys: readonly EncryptionKeyConfig[]): SecretBox {
  if (keys.length === 0) throw new Error('createSecretBox: at least one key is required');
  const byId = new Map(keys.map((k) => [k.id, Buffer.from(k.key, 'base64')]));
  for (const [id, key] of byId) if (key.length !== 32) throw new Error(`secrets key ${id} is not 32 bytes`);
  const current = keys[0]!.id;
  return {
    keyId: current,
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
      const key = id !== undefined ? byId.get(id) : undefined;
      if (version !== VERSION || !key || iv === undefined || tag === undefined || body === undefined) throw new Error('sealed secret: unknown format or key');
      const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64url'));
      decipher.setAAD(Buffer.from(`${VERSION}.${id}`));
      decipher.setAuthTag(Buffer.from(tag, 'base64url'));
      return Buffer.concat([decipher.update(Buffer.from(body, 'base64url')), decipher.final()]).toString('utf8');
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
