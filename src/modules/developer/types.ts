/**
 * The developer module's domain shapes. What the wire carries is the spec's schemas in domain form
 * (camelCase, `Camelize`); the two look-up shapes offered to later modules (`DeveloperProfile`,
 * `Team`) and `TeamMemberSummary` are not on the wire and are written here.
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

/** An approved developer's public identity (one per user). */
export interface DeveloperProfile {
  readonly id: string;
  readonly userId: string;
  readonly displayName: string;
  readonly slug: string;
  readonly description: string | null;
  readonly githubUrl: string | null;
  readonly websiteUrl: string | null;
  readonly avatarKey: string | null;
  readonly createdAt: Date;
}

/** A developer team (created by an approved team application or by a developer). */
export interface Team {
  readonly id: string;
  readonly name: string;
  readonly slug: string;
  readonly description: string | null;
  readonly githubUrl: string | null;
  readonly websiteUrl: string | null;
  readonly avatarKey: string | null;
  readonly ownerUserId: string;
  readonly createdAt: Date;
}

export interface TeamMemberSummary {
  readonly userId: string;
  readonly displayName: string;
  readonly avatarUrl: string | null;
  readonly role: string;
}

/** The service validates `applicationType` itself (400 with Part 2's message), so it takes any string. */
export type SubmitApplicationInput = Omit<Camelize<Schemas['SubmitDeveloperApplicationRequest']>, 'applicationType' | 'slug'> & { applicationType: string; slug: string };
export type SubmitVerificationInput = Camelize<Schemas['SubmitDeveloperVerificationRequest']>;
export type CreateDeveloperKeyInput = Camelize<Schemas['CreateDeveloperApiKeyRequest']>;
