/**
 * @creator-backend/sdk/node: the browser entry with the `ws` package as the WebSocket (Node 20
 * has no global WebSocket). Install `ws` beside the SDK to use it.
 */
import WebSocket from 'ws';
import { createSdk as createBrowserSdk, type Sdk, type SdkOptions, type WebSocketConstructor } from './index.js';

export * from './index.js';

export function createSdk(options: SdkOptions): Sdk {
  return createBrowserSdk({ WebSocket: WebSocket as unknown as WebSocketConstructor, ...options });
}
