/**
 * The connections module's domain shapes, derived from the specs (camelCase, `Camelize`). A login
 * assignment has no REST twin, so its shape is the GraphQL type's.
 */
import type { GqlLoginAssignment } from '../../../generated/graphql';
import type { components } from '../../../generated/openapi';
import type { Camelize } from '../../http/mapping';

type Schemas = components['schemas'];

export type ConnectionStatus = Camelize<Schemas['ConnectionStatus']>;
export type PlatformCredentialMode = Camelize<Schemas['PlatformCredentialMode']>;
export type LoginAssignment = Omit<GqlLoginAssignment, '__typename'>;
export type PlatformSwitches = Camelize<Schemas['PlatformSwitches']>;
