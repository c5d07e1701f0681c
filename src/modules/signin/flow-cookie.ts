/**
 * The `svc-signin` cookie: what a sign-in needs between leaving for the provider and coming back
 * (PKCE verifier, state, nonce, where to send the browser, for whom). It is a JWT encrypted and
 * authenticated by jose (`dir` + A256GCM) under a key derived from `auth.jwt_secret`, so the
 * browser can neither read the verifier nor forge or alter any field; it expires in 10 minutes.
 */
import { hkdfSync } from 'node:crypto';
import { EncryptJWT, jwtDecrypt } from 'jose';

export const FLOW_COOKIE = 'svc-signin';
export const FLOW_TTL_SECONDS = 600;

export interface Flow {
  /** Flow id: recorded when used, so a flow completes once. */
  fid: string;
  provider: string;
  type: 'login' | 'channel' | 'bot';
  redirectUri: string;
  callbackUrl: string;
  state: string;
  nonce: string | null;
  verifier: string;
  /** Channel and bot connections: the account and the user that started them. */
  accountId: string | null;
  userId: string | null;
}

export interface FlowCodec {
  seal(flow: Flow): Promise<string>;
  /** The flow, or null when the value is not one this service sealed in the last 10 minutes. */
  open(value: string): Promise<Flow | null>;
}

export function createFlowCodec(jwtSecret: string): FlowCodec {
  const key = new Uint8Array(hkdfSync('sha256', jwtSecret, 'svc-signin', 'sign-in flow cookie', 32));
  return {
    seal: (flow) => new EncryptJWT({ flow }).setProtectedHeader({ alg: 'dir', enc: 'A256GCM' }).setIssuedAt().setExpirationTime(`${FLOW_TTL_SECONDS}s`).encrypt(key),
    async open(value) {
      try {
        const { payload } = await jwtDecrypt(value, key, { keyManagementAlgorithms: ['dir'], contentEncryptionAlgorithms: ['A256GCM'] });
        const flow = payload.flow as Flow | undefined;
        return flow && typeof flow.fid === 'string' && typeof flow.state === 'string' && typeof flow.verifier === 'string' ? flow : null;
      } catch {
        return null;
      }
    },
  };
}
