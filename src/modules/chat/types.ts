/**
 * The chat module's domain shapes, derived from the specs (camelCase, `Camelize`). The moderation
 * log entry has no REST schema (it reaches clients only as `chat:moderation_log` on the socket):
 * its shape is the columns' (repo.ts).
 */
import type { ModerationInput, SendChatInput } from '../../../generated/graphql';
import type { components } from '../../../generated/openapi';
import type { Camelize } from '../../http/mapping';

type Schemas = components['schemas'];

export type ChatMessage = Camelize<Schemas['ChatMessage']>;
/** The other channel's room of a shared-chat message. */
export type ChatSourceChannelView = NonNullable<ChatMessage['sourceChannel']>;
export type ChatUserProfile = Camelize<Schemas['ChatUserProfile']>;
export type ChatUserSearchItem = Camelize<Schemas['ChatUserSearchItem']>;
export type UserTreatment = ChatUserProfile['userTreatment'];
export type SendResult = Camelize<Schemas['ChatSendResult']>;
export type SendErrorCode = NonNullable<SendResult['errorCode']>;
export type ModerateResult = Camelize<Schemas['ChatModerationResult']>;
export type ModerationAction = ModerateResult['action'];
/**
 * A send or moderate request: the REST body (camelCase) or the GraphQL input, which types the
 * enums as strings and the optional members as nullable; the service validates either.
 */
export type SendInput = Camelize<Schemas['SendChatBody']> | SendChatInput;
export type ModerateInput = Camelize<Schemas['ModerateChatBody']> | ModerationInput;
