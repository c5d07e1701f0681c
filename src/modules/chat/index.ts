/**
 * The chat module: aggregated chat messages, the moderation log and platform user profiles (scaffold).
 */
import { defineModule } from '../contract';
import type { ChatPipeline } from './api';

export type ChatApi = ChatPipeline;

declare module '../contract' {
  interface ModuleApis {
    chat: ChatApi;
  }
}

export const chatModule = defineModule({
  name: 'chat',
  build: () => ({ api: { ingestMessage: () => Promise.reject(new Error('chat pipeline not built')), recordModeration: () => Promise.reject(new Error('chat pipeline not built')) } as ChatApi }),
});
