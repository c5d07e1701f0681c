import { messages } from '../../errors';
import { jsonTooLarge } from '../../infra/json-bytes';

/** The sounds module's error messages (Part 2, "Sounds"; PLAN_LIMIT_REACHED worded as Part 1's other quotas). */

/**
 * Who sets the limit an upload ran into: the account's plan (its sound limits, or `upload` and
 * `storage`: the plan's `max_upload_size_bytes` per upload and `max_storage_bytes` across all of
 * the account's uploads), or an extension's own limits.
 */
export type LimitHolder = 'plan' | 'extension' | 'upload' | 'storage';

/** Bytes of JSON text a sound's waveform may take. */
export const MAX_WAVEFORM_BYTES = 65536;

export const soundMessages = {
  waveformTooLarge: jsonTooLarge('waveform', MAX_WAVEFORM_BYTES),
  soundNotFound: 'Sound not found',
  widgetNotFound: 'Widget not found',
  overlayNotFound: 'Overlay not found',
  fileRequired: 'file is required',
  oneFile: 'Only one file may be uploaded',
  unexpectedField: (field: string) => `Unexpected form field: ${field}`,
  malformedMultipart: messages.malformedMultipart,
  unsupportedType: 'Unsupported audio type: upload an MP3, WAV, OGG or FLAC file',
  fileTooLarge: (max: number, holder: LimitHolder) =>
    holder === 'upload'
      ? `File too large: your plan allows ${max} bytes per upload`
      : holder === 'extension'
        ? `Sound file too large: this extension allows ${max} bytes per file`
        : `Sound file too large: your plan allows ${max} bytes per file`,
  countReached: (max: number, holder: LimitHolder) =>
    holder === 'plan' ? `Sound limit reached: your plan allows ${max} sound(s)` : `Sound limit reached: this extension may store ${max} sound(s)`,
  storageReached: (max: number, holder: LimitHolder) =>
    holder === 'storage'
      ? `Storage limit reached: your plan allows ${max} bytes`
      : holder === 'extension'
        ? `Sound storage limit reached: this extension may store ${max} bytes`
        : `Sound storage limit reached: your plan allows ${max} bytes`,
  invalidName: 'name must be 1 to 100 characters',
  invalidDuration: 'duration_ms must be an integer from 0 to 2147483647',
  invalidVolume: 'volume must be a number from 0.0 to 1.0',
  invalidTargetType: 'target.type must be widget or overlay',
  invalidTargetId: 'target.id must be a UUID',
  invalidLimit: 'limit must be >= 1 and <= 100',
  invalidOffset: 'offset must be >= 0 and <= 2147483647',
  invalidLimitOverride: (field: string) => `${field} must be a non-negative integer or null`,
} as const;
