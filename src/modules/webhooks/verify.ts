/**
 * Signature checks of the receivers, over the raw bytes (node:crypto only). Comparisons are
 * constant-time; nothing here logs or returns a secret.
 */
import { createHash, createHmac, createPublicKey, timingSafeEqual, verify as verifySignature, type KeyObject } from 'node:crypto';

/** The signature timestamp tolerance (Part 2 "Limits"). */
export const TOLERANCE_SECONDS = 300;

/** Constant-time equality of two strings of any length (both are hashed first). */
export function safeEqual(a: string, b: string): boolean {
  const digest = (value: string) => createHash('sha256').update(value, 'utf8').digest();
  return timingSafeEqual(digest(a), digest(b)) && a.length === b.length;
}

export function hmac(algorithm: 'sha256' | 'sha1', secret: string, data: Buffer | string, encoding: 'hex' | 'base64'): string {
  return createHmac(algorithm, secret).update(data).digest(encoding);
}

/** `X-Hub-Signature-256: sha256=<hex>` or `X-Hub-Signature: sha1=<hex>` against the body. */
export function hubSignatureValid(header: string, algorithm: 'sha256' | 'sha1', secret: string, body: Buffer): boolean {
  const prefix = `${algorithm}=`;
  if (!header.toLowerCase().startsWith(prefix)) return false;
  return safeEqual(header.slice(prefix.length).trim().toLowerCase(), hmac(algorithm, secret, body, 'hex'));
}

/** `t=<unix>,v1=<hex>[,v1=<hex>...]`; null without a numeric `t` or any `v1`. */
export function parseProviderSignature(header: string): { timestamp: number; signatures: string[] } | null {
  let timestamp: number | null = null;
  const signatures: string[] = [];
  for (const part of header.split(',')) {
    const at = part.indexOf('=');
    if (at < 1) continue;
    const key = part.slice(0, at).trim();
    const value = part.slice(at + 1).trim();
    if (key === 't' && /^\d{1,12}$/.test(value)) timestamp = Number(value);
    else if (key === 'v1' && value) signatures.push(value.toLowerCase());
  }
  return timestamp === null || signatures.length === 0 ? null : { timestamp, signatures };
}

/** Whether `v1` holds the HMAC-SHA256 of `<t>.<body>`; every candidate is compared (no early exit on a match position). */
export function providerSignatureValid(parsed: { timestamp: number; signatures: string[] }, secret: string, body: Buffer): boolean {
  const expected = createHmac('sha256', secret).update(`${parsed.timestamp}.`).update(body).digest('hex');
  return parsed.signatures.map((candidate) => safeEqual(candidate, expected)).some(Boolean);
}

/** Unix seconds from digits or an RFC 3339 time; null otherwise. */
export function parseTimestamp(value: string): number | null {
  const trimmed = value.trim();
  if (/^\d{1,12}$/.test(trimmed)) return Number(trimmed);
  if (!/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/i.test(trimmed)) return null;
  const ms = Date.parse(trimmed);
  return Number.isNaN(ms) ? null : ms / 1000;
}

/** Inside ±TOLERANCE_SECONDS of now (both edges included). */
export function withinTolerance(timestamp: number, nowSeconds: number): boolean {
  return Math.abs(nowSeconds - timestamp) <= TOLERANCE_SECONDS;
}

/** A PEM (or base64 DER SPKI) public key; null when it does not parse. */
export function loadPublicKey(material: string): KeyObject | null {
  try {
    if (material.includes('-----BEGIN')) return createPublicKey(material);
    return createPublicKey({ key: Buffer.from(material, 'base64'), format: 'der', type: 'spki' });
  } catch {
    return null;
  }
}

/** Base64 RSA-SHA256 (PKCS#1 v1.5) signature over `data`. */
export function rsaSignatureValid(key: KeyObject, data: Buffer, signatureBase64: string): boolean {
  try {
    return verifySignature('sha256', data, key, Buffer.from(signatureBase64.trim(), 'base64'));
  } catch {
    return false;
  }
}
