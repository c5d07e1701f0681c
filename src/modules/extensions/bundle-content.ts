/**
 * The content of an extension bundle as it is served and hashed: the wire form of the
 * ExtensionBundle schema (`{ manifest, handler_code }`, members in the schema's order, so the
 * text is the same whether the manifest comes from an upload or back from a jsonb column, which
 * keeps keys its own way). Its SHA-256 is the hash of the JSON text of the served `data`, which a
 * client can check. Pure; shared by the upload, the migration that hashed earlier uploads, and
 * serving.
 */
import { createHash } from 'node:crypto';
import { shapeOf, toWire } from '../../http/mapping';

const bundleShape = shapeOf({ $ref: '#/components/schemas/ExtensionBundle' });

/** The served bundle in wire form, from a stored (domain form) manifest and handler code. */
export function bundleContent(manifest: unknown, handlerCode: string): Record<string, unknown> {
  return toWire({ manifest, handlerCode }, bundleShape) as Record<string, unknown>;
}

/** SHA-256 (hex) of the bundle's JSON text. */
export function bundleHash(manifest: unknown, handlerCode: string): string {
  return createHash('sha256').update(JSON.stringify(bundleContent(manifest, handlerCode))).digest('hex');
}
