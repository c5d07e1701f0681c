import { jsonTooLarge } from '../../infra/json-bytes';

/** The audit module's error messages. */
export const auditMessages = {
  unknownScope: (scope: string) => `Unknown scope: ${scope}`,
  unsupportedType: (type: string) => `Unsupported audit event type: ${type}`,
  metadataNotObject: 'metadata must be a JSON object',
  metadataTooLarge: (max: number) => jsonTooLarge('metadata', max),
} as const;
