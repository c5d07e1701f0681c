/** The payouts module's messages (designed here; spec/openapi/modules/payouts.yaml quotes them). */
export const payoutMessages = {
  notDeveloper: 'You must be an approved developer to manage payouts',
  teamNotFound: 'Team not found',
  missingTeamPermission: (permission: string) => `Missing team permission: ${permission}`,
  payoutNotFound: 'Payout not found',
  payoutEmailRequired: 'Set a payout email before requesting a payout',
  noRevenue: (currency: string) => `No available revenue in ${currency}`,
  amountExceedsAvailable: 'Amount exceeds the available revenue',
  /** REST's request validator's words for a `status` outside the enum, so GraphQL's String says the same. */
  badStatus: 'query.status must be equal to one of the allowed values: pending, processing, paid, failed, canceled',
} as const;
