/**
 * The accounts module's domain shapes: the spec's schemas in domain form (camelCase, `Camelize`).
 * A user as other modules see it is the identity part of `Me`; a login connection is the
 * connections module's (it supplies them to `me`).
 */
import type { components } from '../../../generated/openapi';
import type { Camelize } from '../../http/mapping';

type Schemas = components['schemas'];

export type Me = Camelize<Schemas['Me']>;
/** A user's identity: what `me` shows before the settings, counts and connections. */
export type User = Pick<Me, 'id' | 'email' | 'displayName' | 'avatarUrl' | 'createdAt'>;
export type Account = Camelize<Schemas['Account']>;
export type AccountMember = Camelize<Schemas['AccountMember']>;
export type AccountInvite = Camelize<Schemas['AccountInvite']>;
export type AccountRole = Camelize<Schemas['AccountRole']>;
/** A display name an audit row's id resolves to: the audit module's type (accounts answers them; chat and realtime read `display_name`). */
export type { ResolvedNameRow } from '../audit';
