/**
 * The connections module's domain shapes, derived from the specs (camelCase, `Camelize`). A login
 * assignment has no REST twin, so its shape is the GraphQL type's; the platform switches are the
 * admin operation's answer, which has no named schema.
 */
import type { GqlLoginAssignment } from '../../../generated/graphql';
import type { components, operations } from '../../../generated/openapi';
import type { Camelize } from '../../http/mapping';

type Schemas = components['schemas'];

export type ConnectionStatus = Camelize<Schemas['ConnectionStatus']>;
export type PlatformCredentialMode = Camelize<Schemas['PlatformCredentialMode']>;
export type LoginAssignment = Omit<GqlLoginAssignment, '__typename'>;
export type PlatformSwitches = Camelize<operations['adminSetPlatformSwitches']['responses'][200]['content']['application/json']['data']>;
