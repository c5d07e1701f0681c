/**
 * The developer module's domain shapes. What the wire carries is the spec's schemas in domain form
 * (camelCase, `Camelize`); the look-up shapes offered to later modules (`DeveloperProfile`, `Team`,
 * `TeamMemberSummary`) are derived from the public profiles' and the team's schemas.
 */
import type { components } from '../../../generated/openapi';
import type { Camelize } from '../../http/mapping';

type Schemas = components['schemas'];

export type DeveloperApplication = Camelize<Schemas['DeveloperApplication']>;
export type AdminDeveloperApplicationItem = Camelize<Schemas['AdminDeveloperApplicationItem']>;
export type DeveloperVerification = Camelize<Schemas['DeveloperVerification']>;
export type DeveloperApiKey = Camelize<Schemas['DeveloperApiKey']>;
/** A team as its member sees it: `role` is the caller's role name (null when not a member). */
export type TeamView = Camelize<Schemas['DeveloperTeam']>;
export type TeamMember = Camelize<Schemas['DeveloperTeamMember']>;
export type TeamRole = Camelize<Schemas['DeveloperTeamRole']>;
export type TeamInvite = Camelize<Schemas['DeveloperTeamInvite']>;
export type TeamInviteLookup = Camelize<Schemas['DeveloperTeamInviteLookup']>;
export type TeamPermission = Camelize<Schemas['DeveloperTeamPermission']>;
export type ReviewResult = Camelize<Schemas['DeveloperReviewResult']>;

/** An approved developer's public identity (one per user): the public profile's own members, and its user. */
export type DeveloperProfile = Omit<Camelize<Schemas['PublicDeveloperProfile']>, 'extensions' | 'stats'> & { userId: string };
/** A developer team as the look-ups offer it: the team without a caller's role. */
export type Team = Omit<TeamView, 'role'>;
/** A member as a public team profile lists them. */
export type TeamMemberSummary = Camelize<Schemas['PublicTeamProfile']['members'][number]>;

/** The service validates `applicationType` itself (400 with Part 2's message), so it takes any string. */
export type SubmitApplicationInput = Omit<Camelize<Schemas['SubmitDeveloperApplicationRequest']>, 'applicationType' | 'slug'> & { applicationType: string; slug: string };
export type SubmitVerificationInput = Camelize<Schemas['SubmitDeveloperVerificationRequest']>;
export type CreateDeveloperKeyInput = Camelize<Schemas['CreateDeveloperApiKeyRequest']>;
