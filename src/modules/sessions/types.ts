/** The sessions module's domain shapes: the spec's schemas and responses in domain form (camelCase, `Camelize`). */
import type { components } from '../../../generated/openapi';
import type { Camelize } from '../../http/mapping';

type Data<R extends keyof components['responses']> = components['responses'][R] extends { content: { 'application/json': { data: infer D } } } ? Camelize<D> : never;

/** A session as its user lists it; `current` marks the caller's own. */
export type SessionInfo = Camelize<components['schemas']['Session']>;
export type SessionTokens = Data<'SessionTokens'>;
export type WsToken = Data<'WsToken'>;
export type PopoutSession = Camelize<components['schemas']['PopoutSession']>;
