/**
 * What the chat module offers the modules built after it: the one entry of the chat pipeline and
 * of the moderation-log pipeline. Both are idempotent on the platform's id, so a redelivered
 * webhook or a replayed socket frame stores nothing twice. The inputs are the platforms module's
 * normalised shapes (src/modules/platforms/inputs.ts): every platform adapter lives there and
 * feeds this pipeline through the sink the chat module registers.
 */
import type { ChatIngest, ModerationIngest } from '../platforms';

export type { ChatIngest, ChatPlatform, ChatSourceChannel, ModerationIngest } from '../platforms';

export interface ChatPipeline {
  /** Stores the message, updates the sender's platform profile and broadcasts `chat:message`. */
  ingestMessage(input: ChatIngest): Promise<void>;
  /** Appends to the moderation log and broadcasts the documented sub-type; false for a redelivery (nothing done). */
  recordModeration(input: ModerationIngest): Promise<boolean>;
}
