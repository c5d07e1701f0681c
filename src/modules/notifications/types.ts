/** The notifications module's domain shapes: the spec's schemas in domain form (camelCase, `Camelize`). */
import type { components } from '../../../generated/openapi';
import type { Camelize } from '../../http/mapping';

export type Notification = Camelize<components['schemas']['Notification']>;
export type NotificationStatus = Notification['status'];
export type NotificationPreference = Camelize<components['schemas']['NotificationPreference']>;
