/**
 * The payouts module's domain shapes: the spec's schemas in domain form (camelCase, `Camelize`),
 * and the stored payout account as an explicit extension of the settings the wire shows.
 */
import type { components } from '../../../generated/openapi';
import type { Camelize } from '../../http/mapping';

type Schemas = components['schemas'];

export type Payout = Camelize<Schemas['Payout']>;
export type PayoutStatus = Payout['status'];
export type PayoutSettings = Camelize<Schemas['PayoutSettings']>;
export type RevenueBalance = Camelize<Schemas['RevenueBalance']>;
export type UpdatePayoutSettingsInput = Camelize<Schemas['UpdatePayoutSettingsBody']>;
export type RequestPayoutInput = Camelize<Schemas['RequestPayoutBody']>;

/** A payee's stored payout account: the settings the wire shows (less the payee, which the caller knows), keyed by payee. */
export type PayoutAccount = Omit<PayoutSettings, 'developerId' | 'teamId' | 'updatedAt'> & { payeeId: string; updatedAt: string };
