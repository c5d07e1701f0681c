/**
 * The signed receivers of the platforms whose Part 2 names no transport, tips_platform and
 * discord (POST /v1/webhooks/tips_platform, /v1/webhooks/discord; the webhooks module checks the
 * `X-Signature-256` HMAC and parses the JSON): the body's `type` picks the message of
 * spec/platforms/<platform>.json, the body is validated against it (an unknown type or a body
 * failing its schema is counted and logged once, and the delivery acknowledged), and the document's
 * connection key (`x-connection-key`: `channel_id`, `guild_id`) names the connection the accounts
 * resolve by. Each becomes its declared event type with the body as raw and `<platform>:<id>` as
 * external id, so a redelivery stores nothing twice.
 */
import { platformConnectionKeys } from '../../../../generated/platforms';
import type { Contracts } from '../contracts';
import type { PlatformInput } from '../inputs';
import { externalIdOf } from '../platform_a/frames';

export const signedPlatforms = ['tips_platform', 'discord'] as const;
export type SignedPlatform = (typeof signedPlatforms)[number];

/** The connection the body names and its input; null when the body is rejected. */
export function signedInput(contracts: Contracts, platform: SignedPlatform, payload: Record<string, unknown>): { connectionId: string; input: PlatformInput } | null {
  const found = contracts.recognise(platform, { type: payload.type }, payload);
  if (!found.ok || found.ingest.kind !== 'event') return null;
  const key = platformConnectionKeys[platform]!;
  return {
    connectionId: String(payload[key]),
    input: { kind: 'event', platform, type: found.ingest.type, raw: payload, externalId: externalIdOf(platform, String(payload.id)) },
  };
}
