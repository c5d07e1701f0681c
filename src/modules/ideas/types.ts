/**
 * The ideas board's domain shapes: the spec's schemas in domain form (camelCase, `Camelize`).
 * Only the list filter (query parameters, not a schema) is written here.
 */
import type { components } from '../../../generated/openapi';
import type { Camelize } from '../../http/mapping';

type Schemas = components['schemas'];

export type Idea = Camelize<Schemas['Idea']>;
export type IdeaCategory = Camelize<Schemas['IdeaCategory']>;
export type IdeaComment = Camelize<Schemas['IdeaComment']>;
export type IdeaTag = Camelize<Schemas['IdeaTag']>;
export type IdeaTimelineItem = Camelize<Schemas['IdeaTimelineItem']>;
export type IdeaParticipant = Camelize<Schemas['IdeaParticipant']>;
export type IdeaVoter = Camelize<Schemas['IdeaVoter']>;
export type VoteType = IdeaVoter['voteType'];

export type CreateIdeaInput = Camelize<Schemas['CreateIdeaBody']>;
export type IdeaInput = Camelize<Schemas['UpdateIdeaBody']>;
export type CreateCategoryInput = Camelize<Schemas['CreateIdeaCategoryBody']>;
export type UpdateCategoryInput = Camelize<Schemas['UpdateIdeaCategoryBody']>;
export type CreateCommentInput = Camelize<Schemas['CreateIdeaCommentBody']>;
export type UpdateCommentInput = Camelize<Schemas['UpdateIdeaCommentBody']>;
export type CreateTagInput = Camelize<Schemas['CreateIdeaTagBody']>;
