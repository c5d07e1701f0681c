/** The admin roles module's domain shapes: the spec's schemas in domain form (camelCase, `Camelize`). */
import type { components } from '../../../generated/openapi';
import type { Camelize } from '../../http/mapping';

type Schemas = components['schemas'];

export type AdminRole = Camelize<Schemas['AdminRole']>;
export type AdminRoleMember = Camelize<Schemas['AdminRoleMember']>;
export type AdminPermissionInfo = Camelize<Schemas['AdminPermissionInfo']>;
