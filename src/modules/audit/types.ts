/** The audit module's domain shapes: the spec's schemas in domain form (camelCase, `Camelize`). */
import type { components } from '../../../generated/openapi';
import type { Camelize } from '../../http/mapping';

export type AuditItem = Camelize<components['schemas']['AuditItem']>;
export type AuditScope = AuditItem['scope'];
export type ResolvedName = AuditItem['resolvedNames'][number];
/** A stored row: an item before its names are resolved. */
export type AuditRecord = Omit<AuditItem, 'resolvedNames'>;
