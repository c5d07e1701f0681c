/**
 * The developer module's messages. Part 2 ("Developer portal") quotes the application, slug and
 * verification ones; the rest are designed here (and written into spec/openapi/modules/developer.yaml).
 */
export const developerMessages = {
  // applications (Part 2)
  invalidApplicationType: "application_type must be 'solo' or 'team'",
  slugLength: 'Slug must be between 3 and 50 characters',
  slugStart: 'Slug must start with a lowercase letter',
  slugCharacters: 'Slug must contain only lowercase letters, digits, and hyphens',
  alreadyDeveloper: 'You already have a developer profile',
  pendingApplication: 'You already have a pending application',
  slugTaken: 'Slug is already taken',
  noApplication: 'No developer application found',
  applicationNotFound: 'Developer application not found',
  applicationNotPending: 'Developer application is not pending',
  fieldRequired: (field: string) => `${field} is required`,
  notesRequired: 'Review notes are required',
  // verification (Part 2)
  legalNameRequired: 'Legal name is required',
  addressLine1Required: 'Address line 1 is required',
  postalCodeRequired: 'Postal code is required',
  cityRequired: 'City is required',
  countryRequired: 'Country is required',
  countryFormat: 'Country must be a 2-letter ISO code',
  verificationNeedsDeveloper: 'You must be an approved developer to submit verification',
  verificationApproved: 'Your developer verification is already approved',
  verificationNotFound: 'Developer verification not found',
  verificationNotPending: 'Developer verification is not pending',
  // developer keys
  developerKeyNotFound: 'Developer key not found',
  // teams
  teamNotFound: 'Team not found',
  ownerOnlyDelete: 'Only the team owner can delete the team',
  memberNotFound: 'Team member not found',
  roleNotFound: 'Team role not found',
  ownerRoleFixed: "The team owner's role cannot be changed",
  ownerRoleNotAssignable: 'The team-owner role cannot be assigned',
  ownerRoleImmutable: 'The team-owner role cannot be changed',
  ownerNotRemovable: 'The team owner cannot be removed',
  systemRoleUndeletable: 'Cannot delete system team role',
  roleInUse: (n: number) => `Role is assigned to ${n} member(s)`,
  roleNameInUse: 'Role name already in use',
  invalidPermission: (p: string) => `Invalid permission: ${p}`,
  cannotGrantTeam: (p: string) => `Cannot grant team permissions you do not hold: ${p}`,
  inviteNotFound: 'Team invite not found',
  inviteExpired: 'Team invite has expired',
  alreadyMember: 'You are already a member of this team',
} as const;
