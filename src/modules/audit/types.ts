/** The audit module's domain shapes: the spec's schemas in domain form (camelCase, `Camelize`). */
import type { components } from '../../../generated/openapi';
import type { Camelize } from '../../http/mapping';

type Schemas = components['schemas'];

export type AuditItem = Camelize<Schemas['AuditItem']>;
export type AuditScope = AuditItem['scope'];
export type ResolvedName = AuditItem['resolvedNames'][number];
/** A stored row: an item before its names are resolved. */
export type AuditRecord = Omit<AuditItem, 'resolvedNames'>;
/** A row to append, as stored: the item's members in wire form without its read-time ones. */
export type AuditInsert = Omit<Schemas['AuditItem'], 'created_at' | 'resolved_names'>;
/** A resolved name as the accounts module answers it (wire form: chat and realtime read `display_name`). */
export type ResolvedNameRow = Schemas['AuditItem']['resolved_names'][number];
