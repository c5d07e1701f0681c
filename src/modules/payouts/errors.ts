/** The payouts module's messages (designed here; spec/openapi/modules/payouts.yaml quotes them). */
export const payoutMessages = {
  notDeveloper: 'You must be an approved developer to manage payouts',
  teamNotFound: 'Team not found',
  missingTeamPermission: (permission: string) => `Missing team permission: ${permission}`,
  payoutNotFound: 'Payout not found',
  payoutEmailRequired: 'Set a payout email before requesting a payout',
  noRevenue: (currency: string) => `No available revenue in ${currency}`,
  amountExceedsAvailable: 'Amount exceeds the available revenue',
} as const;
