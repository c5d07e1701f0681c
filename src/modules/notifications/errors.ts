/** The notifications module's error messages. */
export const notificationMessages = {
  notFound: 'Notification not found',
  unknownAction: (a: string) => `Unknown action: ${a}`,
  unknownChannel: (c: string) => `Unknown channel: ${c}`,
  unknownType: (t: string) => `Unknown notification type: ${t}`,
  locked: (t: string) => `Notification type ${t} cannot be changed`,
  alreadyAnswered: 'Invite is no longer valid',
} as const;
