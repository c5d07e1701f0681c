import { jsonTooLarge } from '../../infra/json-bytes';

/** Bytes of JSON text a preset's payload may take (as an overlay's settings, which presets hold). */
export const MAX_PAYLOAD_BYTES = 32768;

/** The setting presets module's messages (Part 1 quotes `Setting preset not found`). */
export const presetMessages = {
  notFound: 'Setting preset not found',
  limitReached: (max: number) => `Setting preset limit reached: your plan allows ${max} preset(s)`,
  blank: (field: string) => `${field} must not be blank`,
  payloadNotObject: 'payload must be a JSON object',
  payloadTooLarge: jsonTooLarge('payload', MAX_PAYLOAD_BYTES),
} as const;
