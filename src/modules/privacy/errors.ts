/** The privacy module's messages (also the `x-error-message`s of its REST schemas, so both protocols read the same). */
export const privacyMessages = {
  unsupportedPlatform: (platform: string) => `Unsupported platform: ${platform}`,
  length: (field: string) => `${field} must be 1 to 200 characters`,
} as const;
