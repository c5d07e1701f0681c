/** Messages of the webhook receivers (the codes are the general table's: 400, 401, 403, 404, 409). */
export const webhookMessages = {
  signatureMissing: 'Missing webhook signature',
  signatureInvalid: 'Invalid webhook signature',
  timestampOutsideTolerance: 'Webhook timestamp outside the tolerance',
  secretNotConfigured: 'Webhook secret not configured',
  verificationNotConfigured: 'Webhook verification not configured',
  certificateUrlRejected: 'Webhook certificate URL not on the provider domain',
  malformedXml: 'Malformed XML in request body',
  payloadNotObject: 'Webhook payload must be a JSON object',
  eventFieldsMissing: 'Webhook event must have an id and a type',
  invalidShopDomain: 'Invalid shop domain',
  missingChannelId: 'No channel id in the feed entry',
  accountNotFound: 'Account not found',
  shopTaken: 'Shop already connected to another account',
} as const;
