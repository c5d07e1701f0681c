import { jsonTooLarge } from '../../infra/json-bytes';

/** The events module's error messages (Part 2, "Events surface"; clients may show them). */
export const eventMessages = {
  eventNotFound: 'Event not found',
  accountNotFound: 'Account not found',
  invalidType: 'type must have the form platform:action (3 to 100 characters)',
  invalidPlatform: 'platform must be 1 to 50 characters',
  invalidRaw: 'raw must be a JSON object',
  rawTooLarge: (max: number) => jsonTooLarge('raw', max),
  invalidOffset: 'offset must be >= 0 and <= 10000000',
  invalidExternalId: 'external_id must be 1 to 255 characters',
  invalidUsername: 'username must be 1 to 100 characters',
  invalidAccountId: 'accountId must be a UUID',
  invalidTime: (field: string) => `${field} must be an RFC 3339 timestamp`,
  tooManyTypes: 'At most 50 event types',
} as const;
