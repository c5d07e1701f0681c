/**
 * REST bindings of chat, in domain form: the router maps names, pages with the declared bounds
 * and applies the declared envelopes (src/http/rest.ts). The profile refresh answers its 429
 * REFRESH_COOLDOWN body with `retry_after_seconds` at the top level (Part 2, "Chat").
 */
import { reply } from '../../http/envelope';
import { bindRest } from '../../http/rest';
import { AppError } from '../../errors';
import type { ChatService } from './service';

export function createChatRest(service: ChatService) {
  return bindRest({
    chatHistory: ({ query, paging }, context) => service.history(context.auth, query, paging),
    searchPlatformUsers: ({ query }, context) => service.searchUsers(context.auth, { query: query.q, platforms: query.platform, limit: query.limit }),
    sendChatToPlatform: ({ body }, context) => service.send(context.auth, body),
    moderateChat: ({ body }, context) => service.moderate(context.auth, body),
    async refreshPlatformUserProfile({ params }, context) {
      try {
        return { data: await service.refreshProfile(context.auth, params.platform, params.platformUserId) };
      } catch (error) {
        if (!(error instanceof AppError) || error.code !== 'REFRESH_COOLDOWN') throw error;
        const seconds = Number(error.details?.retry_after_seconds);
        return reply(429, { error: 'REFRESH_COOLDOWN' as const, message: error.message, retryAfterSeconds: seconds }, { 'Retry-After': String(seconds) });
      }
    },
  });
}
