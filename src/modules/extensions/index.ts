/**
 * The extensions module: extensions, versions, limits, purchases, installs and internal feeds (scaffold).
 */
import { defineModule } from '../contract';

/** An extension purchase as the payment-connect webhook reports it (idempotent on `externalId`). */
export interface PurchaseRecord {
  /** The payment provider's checkout session or payment id. */
  externalId: string;
  extensionId: string;
  /** The buying account when the checkout carried it, else null. */
  accountId: string | null;
  buyerUserId: string | null;
  amountCents: number;
  currency: string;
}

export interface ExtensionsApi {
  recordPurchase(purchase: PurchaseRecord): Promise<void>;
  /** Marks a purchase refunded by its external id (checkout session or payment intent); unknown ids are ignored. */
  refundPurchase(externalId: string): Promise<void>;
}

declare module '../contract' {
  interface ModuleApis {
    extensions: ExtensionsApi;
  }
}

export const extensionsModule = defineModule({
  name: 'extensions',
  build: () => ({ api: { recordPurchase: () => Promise.reject(new Error('not built')), refundPurchase: () => Promise.reject(new Error('not built')) } as ExtensionsApi }),
});
