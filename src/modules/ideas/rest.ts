/**
 * REST bindings of the ideas board (domain form; the router maps names, pages and applies the
 * declared envelopes). REST only: the specification shows no GraphQL for the ideas board.
 */
import { SUCCESS, reply } from '../../http/envelope';
import { bindRest } from '../../http/rest';
import type { IdeasService } from './service';

export function createIdeasRest(service: IdeasService) {
  return bindRest({
    listIdeas: ({ query, paging }, context) => service.list(context.auth, query, paging),
    getIdea: ({ params }, context) => service.get(context.auth, params.id),
    createIdea: async ({ body }, context) => reply(201, await service.create(context.auth, body)),
    updateIdea: ({ params, body }, context) => service.update(context.auth, params.id, body),
    async deleteIdea({ params }, context) {
      await service.remove(context.auth, params.id);
      return SUCCESS;
    },
    setIdeaStatus: ({ params, body }, context) => service.setStatus(context.auth, params.id, body.status),
    voteIdea: ({ params, body }, context) => service.vote(context.auth, params.id, body.voteType),
    unvoteIdea: ({ params }, context) => service.vote(context.auth, params.id, null),
    listIdeaVoters: ({ params, paging }, context) => service.voters(context.auth, params.id, paging),
    listIdeaParticipants: ({ params, query }, context) => service.participants(context.auth, params.id, query.search),
    listIdeaComments: ({ params }, context) => service.comments(context.auth, params.id),
    createIdeaComment: async ({ params, body }, context) => reply(201, await service.createComment(context.auth, params.id, body)),
    updateIdeaComment: ({ params, body }, context) => service.updateComment(context.auth, params.id, body),
    async deleteIdeaComment({ params }, context) {
      await service.removeComment(context.auth, params.id);
      return SUCCESS;
    },
    voteIdeaComment: ({ params, body }, context) => service.voteComment(context.auth, params.id, body.voteType, 'toggle'),
    unvoteIdeaComment: ({ params, body }, context) => service.voteComment(context.auth, params.id, body?.voteType ?? null, 'remove'),
    listIdeaCategories: (_r, context) => service.categories(context.auth),
    createIdeaCategory: async ({ body }, context) => reply(201, await service.createCategory(context.auth, body)),
    updateIdeaCategory: ({ params, body }, context) => service.updateCategory(context.auth, params.id, body),
    async deleteIdeaCategory({ params }, context) {
      await service.deleteCategory(context.auth, params.id);
      return SUCCESS;
    },
    listIdeaTags: ({ query }, context) => service.tags(context.auth, query.search),
    async createIdeaTag({ body }, context) {
      const { tag, created } = await service.createTag(context.auth, body);
      return created ? reply(201, tag) : tag;
    },
    async deleteIdeaTag({ params }, context) {
      await service.deleteTag(context.auth, params.id);
      return SUCCESS;
    },
  });
}
