/**
 * The ideas board (Part 2, "Ideas board", "States and transitions"): ideas with categories, tags,
 * votes and a status timeline; nested comments with sanitized HTML, mentions and votes; the
 * participants and voters of an idea; live updates on `ideas:list` and `ideas:{idea_id}`.
 *
 * The declared gates (auth kind, user- or admin-scope permission, `system:ideas_hub`) run in
 * shared code before this service. Reads are public (Part 2: "GET endpoints are public"); the
 * `system:ideas_hub_public` switch opens the `ideas:list` / `ideas:{idea_id}` socket channels to
 * anonymous subscribers (their gate, spec/ws-protocol/modules/ideas.json). What stays here depends on data: the
 * own-or-moderator rules, where the grant an edit or delete needs depends on who wrote the row. Every multi-row
 * change runs in one transaction; live updates are published after the commit.
 */
import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import { hasPermission, requireUserId, type AuthContext } from '../../auth/context';
import type { FeatureChecker } from '../../auth/gates';
import { AppError, messages } from '../../errors';
import { shapeOf, toWire } from '../../http/mapping';
import type { Bus } from '../../infra/bus';
import type { Logger } from '../../infra/logger';
import { pageOf, type Page, type PageRequest } from '../../paging';
import { ideaMessages } from './errors';
import { isUniqueViolation, type IdeaRecord, type IdeaSort, type IdeasRepo } from './repo';
import { sanitizeCommentBody } from './sanitize';
import type {
  CreateCategoryInput,
  CreateCommentInput,
  CreateIdeaInput,
  CreateTagInput,
  Idea,
  IdeaCategory,
  IdeaComment,
  IdeaInput,
  IdeaParticipant,
  IdeaTag,
  IdeaVoter,
  UpdateCategoryInput,
  UpdateCommentInput,
  VoteType,
} from './types';
import { UUID_RE } from '../../infra/ids';

export type { Idea, IdeaCategory, IdeaComment, IdeaParticipant, IdeaTag, IdeaTimelineItem, IdeaVoter } from './types';

export const IDEAS_HUB_PUBLIC = 'system:ideas_hub_public';

export interface IdeaListFilter {
  status?: string | null;
  categoryId?: string | null;
  tagIds?: string | null;
  authorId?: string | null;
  search?: string | null;
  sort?: IdeaSort | null;
  offset?: number | null;
}

const STATUS_RE = /^[a-z][a-z0-9_]{0,39}$/;
const MAX_TAGS = 10;
const MAX_PARTICIPANTS = 50;
const MAX_TAG_RESULTS = 100;

/** Bus channels (spec/ws-protocol/ relays): `ideas:list` → socket `ideas:list`, `idea:{id}` → socket `ideas:{id}`. */
export const IDEAS_LIST_BUS = 'ideas:list';
export const ideaBusChannel = (ideaId: string) => `idea:${ideaId}`;

const ideaShape = shapeOf({ $ref: '#/components/schemas/Idea' });
const commentShape = shapeOf({ $ref: '#/components/schemas/IdeaComment' });

const validation = (field: string, message: string) => AppError.validation(message, { fields: [{ field, message }] });

function checkTitle(value: string): string {
  const title = value.trim();
  if (title.length < 3 || title.length > 200) throw validation('title', ideaMessages.invalidTitle);
  return title;
}

function checkDescription(value: string): string {
  const description = value.trim();
  if (description.length > 10000) throw validation('description', ideaMessages.invalidDescription);
  return description;
}

function checkStatus(value: string): string {
  if (!STATUS_RE.test(value)) throw validation('status', ideaMessages.invalidStatus);
  return value;
}

function parseTagIds(value: string | null | undefined): string[] | undefined {
  if (value === undefined || value === null || value.trim() === '') return undefined;
  const ids = value.split(',').map((s) => s.trim()).filter(Boolean);
  if (ids.length > 100 || ids.some((id) => !UUID_RE.test(id))) throw validation('tag_ids', ideaMessages.invalidTagIds);
  return [...new Set(ids.map((id) => id.toLowerCase()))];
}

/** The viewer's user id (null for anonymous callers and contexts without a user). */
const viewerOf = (auth: AuthContext): string | null => auth.userId ?? null;

export function createIdeasService(deps: { repo: IdeasRepo; knex: Knex; bus: Bus; log: Logger; features: FeatureChecker }) {
  const { repo, knex, bus, log } = deps;

  /** The caller may act on a row through the own grant (their rows) or the moderation grant (any row). */
  function ownOrModerator(auth: AuthContext, own: string, moderate: string): { moderator: boolean } {
    const moderator = hasPermission(auth, moderate, 'admin');
    if (!moderator && !hasPermission(auth, own, 'user')) throw AppError.forbidden(messages.missingPermission(own));
    return { moderator };
  }

  async function publish(channels: string[], type: string, data: unknown): Promise<void> {
    const message = JSON.stringify({ type, data });
    for (const channel of channels) {
      await bus.publish(channel, message).catch((error: unknown) => log.warn({ err: error, channel }, 'ideas live update failed'));
    }
  }

  const ideaWire = (idea: Idea) => toWire({ ...idea, myVote: null, timeline: undefined }, ideaShape);
  const commentWire = (comment: IdeaComment) => toWire({ ...comment, myVote: null, replies: undefined }, commentShape);

  async function withTags(rows: IdeaRecord[]): Promise<Idea[]> {
    const byIdea = await repo.tagsOf(rows.map((r) => r.id));
    return rows.map((r) => ({ ...r, tags: byIdea.get(r.id) ?? [] }));
  }

  async function loadIdea(id: string, viewerId: string | null, withTimeline: boolean): Promise<Idea> {
    const row = await repo.idea(id, viewerId);
    if (!row) throw AppError.notFound(ideaMessages.ideaNotFound);
    const [idea] = await withTags([row]);
    if (withTimeline) idea!.timeline = await repo.timeline(id);
    return idea!;
  }

  async function loadComment(id: string, viewerId: string | null): Promise<IdeaComment> {
    const row = await repo.comment(id, viewerId);
    if (!row) throw AppError.notFound(ideaMessages.commentNotFound);
    return row;
  }

  /** Category and tags of an idea input, checked inside the writing transaction. */
  async function checkRefs(input: IdeaInput, trx: Knex.Transaction): Promise<{ tagIds?: string[] }> {
    if (input.categoryId !== undefined && input.categoryId !== null && !(await repo.category(input.categoryId, trx))) {
      throw validation('category_id', ideaMessages.unknownCategory);
    }
    if (input.tagIds === undefined) return {};
    const tagIds = [...new Set(input.tagIds.map((id) => id.toLowerCase()))];
    if (tagIds.length > MAX_TAGS) throw validation('tag_ids', ideaMessages.tooManyTags);
    const existing = await repo.existingTags(tagIds, trx);
    const unknown = tagIds.find((id) => !existing.has(id));
    if (unknown) throw validation('tag_ids', ideaMessages.unknownTag(unknown));
    return { tagIds };
  }

  async function ideaChanged(id: string, type: 'idea:updated' | 'idea:status_changed' | 'idea:voted'): Promise<void> {
    const row = await repo.idea(id, null);
    if (!row) return;
    const [idea] = await withTags([row]);
    await publish([IDEAS_LIST_BUS, ideaBusChannel(id)], type, ideaWire(idea!));
  }

  return {
    // ------------------------------------------------------------------ ideas
    async list(auth: AuthContext, filter: IdeaListFilter, request: PageRequest): Promise<Page<Idea>> {
      const search = filter.search?.trim();
      const query = {
        status: filter.status ?? undefined,
        categoryId: filter.categoryId ?? undefined,
        tagIds: parseTagIds(filter.tagIds),
        authorId: filter.authorId ?? undefined,
        search: search ? search : undefined,
        sort: filter.sort ?? 'newest',
      };
      const offset = filter.offset ?? request.offset;
      const { rows, total } = await repo.page(query, viewerOf(auth), request.limit, offset);
      return pageOf(await withTags(rows), total, { page: Math.floor(offset / request.limit) + 1, limit: request.limit });
    },
    async get(auth: AuthContext, id: string): Promise<Idea> {
      return loadIdea(id, viewerOf(auth), true);
    },
    async create(auth: AuthContext, input: CreateIdeaInput): Promise<Idea> {
      const userId = requireUserId(auth);
      const title = checkTitle(input.title);
      const description = checkDescription(input.description);
      const id = randomUUID();
      await knex.transaction(async (trx) => {
        const { tagIds } = await checkRefs(input, trx);
        await repo.insertIdea({ id, author_id: userId, title, description, category_id: input.categoryId ?? null }, trx);
        if (tagIds) await repo.setTags(id, tagIds, trx);
        await repo.insertTimeline({ id: randomUUID(), idea_id: id, event_type: 'created', actor_id: userId, from_status: null, to_status: 'open' }, trx);
      });
      const idea = await loadIdea(id, userId, true);
      await publish([IDEAS_LIST_BUS], 'idea:created', ideaWire(idea));
      return idea;
    },
    async update(auth: AuthContext, id: string, input: IdeaInput): Promise<Idea> {
      const { moderator } = ownOrModerator(auth, 'ideas:edit', 'ideas:moderate_edit');
      const patch: { title?: string; description?: string; category_id?: string | null } = {};
      if (input.title !== undefined) patch.title = checkTitle(input.title);
      if (input.description !== undefined) patch.description = checkDescription(input.description);
      if (input.categoryId !== undefined) patch.category_id = input.categoryId;
      await knex.transaction(async (trx) => {
        const row = await repo.lockIdea(id, trx);
        if (!row) throw AppError.notFound(ideaMessages.ideaNotFound);
        if (!moderator && row.authorId !== auth.userId) throw AppError.forbidden(ideaMessages.notOwnIdeaEdit);
        const { tagIds } = await checkRefs(input, trx);
        await repo.updateIdea(id, patch, trx);
        if (tagIds) await repo.setTags(id, tagIds, trx);
      });
      await ideaChanged(id, 'idea:updated');
      return loadIdea(id, viewerOf(auth), true);
    },
    async remove(auth: AuthContext, id: string): Promise<void> {
      const { moderator } = ownOrModerator(auth, 'ideas:delete', 'ideas:moderate_delete');
      await knex.transaction(async (trx) => {
        const row = await repo.lockIdea(id, trx);
        if (!row) throw AppError.notFound(ideaMessages.ideaNotFound);
        if (!moderator && row.authorId !== auth.userId) throw AppError.forbidden(ideaMessages.notOwnIdeaDelete);
        await repo.deleteIdea(id, trx);
      });
      await publish([IDEAS_LIST_BUS, ideaBusChannel(id)], 'idea:deleted', { id });
    },
    /** Any move between slugs (the set is open-ended); the same status changes nothing. */
    async setStatus(auth: AuthContext, id: string, value: string): Promise<Idea> {
      const status = checkStatus(value);
      const changed = await knex.transaction(async (trx) => {
        const row = await repo.lockIdea(id, trx);
        if (!row) throw AppError.notFound(ideaMessages.ideaNotFound);
        if (row.status === status) return false;
        await repo.updateIdea(id, { status }, trx);
        await repo.insertTimeline({ id: randomUUID(), idea_id: id, event_type: 'status_changed', actor_id: auth.userId ?? null, from_status: row.status, to_status: status }, trx);
        return true;
      });
      if (changed) await ideaChanged(id, 'idea:status_changed');
      return loadIdea(id, viewerOf(auth), true);
    },

    // ------------------------------------------------------------------ idea votes
    async vote(auth: AuthContext, id: string, voteType: VoteType | null): Promise<Idea> {
      const userId = requireUserId(auth);
      await knex.transaction(async (trx) => {
        if (!(await repo.lockIdea(id, trx))) throw AppError.notFound(ideaMessages.ideaNotFound);
        if (voteType === null) await repo.deleteIdeaVote(id, userId, trx);
        else await repo.upsertIdeaVote(id, userId, voteType, trx);
        await repo.recountIdeaVotes(id, trx);
      });
      await ideaChanged(id, 'idea:voted');
      return loadIdea(id, userId, false);
    },
    async voters(_auth: AuthContext, id: string, request: PageRequest): Promise<Page<IdeaVoter>> {
      if (!(await repo.idea(id, null))) throw AppError.notFound(ideaMessages.ideaNotFound);
      const { rows, total } = await repo.voters(id, request.limit, request.offset);
      return pageOf(rows, total, request);
    },
    async participants(_auth: AuthContext, id: string, search: string | null | undefined): Promise<IdeaParticipant[]> {
      if (!(await repo.idea(id, null))) throw AppError.notFound(ideaMessages.ideaNotFound);
      const rows = await repo.participants(id, search?.trim() || undefined, MAX_PARTICIPANTS);
      const order = ['author', 'voter', 'commenter'] as const;
      return rows.map((r) => {
        const roles = new Set(r.roles.split(','));
        return { ...r, roles: order.filter((role) => roles.has(role)) };
      });
    },

    // ------------------------------------------------------------------ comments
    /** The comment tree: top-level comments oldest first, replies nested under their parent. */
    async comments(auth: AuthContext, ideaId: string): Promise<IdeaComment[]> {
      if (!(await repo.idea(ideaId, null))) throw AppError.notFound(ideaMessages.ideaNotFound);
      const rows = await repo.comments(ideaId, viewerOf(auth));
      const byId = new Map<string, IdeaComment>();
      for (const row of rows) byId.set(row.id, { ...row, replies: [] });
      const roots: IdeaComment[] = [];
      for (const comment of byId.values()) {
        const parent = comment.parentId ? byId.get(comment.parentId) : undefined;
        if (parent) parent.replies!.push(comment);
        else roots.push(comment);
      }
      return roots;
    },
    async createComment(auth: AuthContext, ideaId: string, input: CreateCommentInput): Promise<IdeaComment> {
      const userId = requireUserId(auth);
      const body = sanitizeCommentBody(input.body);
      if (!body.hasText) throw validation('body', ideaMessages.commentBodyRequired);
      const id = randomUUID();
      await knex.transaction(async (trx) => {
        if (!(await repo.lockIdea(ideaId, trx))) throw AppError.notFound(ideaMessages.ideaNotFound);
        if (input.parentId) {
          const parent = await repo.lockComment(input.parentId, trx);
          if (!parent || parent.ideaId !== ideaId || parent.deletedAt !== null) throw validation('parent_id', ideaMessages.parentNotFound);
        }
        await repo.insertComment({ id, idea_id: ideaId, parent_id: input.parentId ?? null, author_id: userId, body: body.html, mentions: body.mentions }, trx);
        await repo.recountComments(ideaId, trx);
        await repo.touchIdea(ideaId, trx);
      });
      const comment = await loadComment(id, userId);
      await publish([ideaBusChannel(ideaId)], 'comment:created', commentWire(comment));
      await ideaChanged(ideaId, 'idea:updated');
      return comment;
    },
    async updateComment(auth: AuthContext, id: string, input: UpdateCommentInput): Promise<IdeaComment> {
      const userId = requireUserId(auth);
      const body = sanitizeCommentBody(input.body);
      if (!body.hasText) throw validation('body', ideaMessages.commentBodyRequired);
      await knex.transaction(async (trx) => {
        const row = await repo.lockComment(id, trx);
        if (!row || row.deletedAt !== null) throw AppError.notFound(ideaMessages.commentNotFound);
        if (row.authorId !== userId) throw AppError.forbidden(ideaMessages.notOwnCommentEdit);
        await repo.updateComment(id, body.html, body.mentions, trx);
      });
      const comment = await loadComment(id, userId);
      await publish([ideaBusChannel(comment.ideaId)], 'comment:updated', commentWire(comment));
      return comment;
    },
    /** A comment with replies stays as a tombstone; one without is removed. */
    async removeComment(auth: AuthContext, id: string): Promise<void> {
      const { moderator } = ownOrModerator(auth, 'ideas:comment_delete', 'ideas:moderate_comment');
      const ideaId = await knex.transaction(async (trx) => {
        const row = await repo.lockComment(id, trx);
        if (!row || row.deletedAt !== null) throw AppError.notFound(ideaMessages.commentNotFound);
        if (!moderator && row.authorId !== auth.userId) throw AppError.forbidden(ideaMessages.notOwnCommentDelete);
        await repo.lockIdea(row.ideaId, trx);
        if (await repo.hasReplies(id, trx)) await repo.tombstoneComment(id, trx);
        else await repo.deleteComment(id, trx);
        await repo.recountComments(row.ideaId, trx);
        return row.ideaId;
      });
      await publish([ideaBusChannel(ideaId)], 'comment:deleted', { id, idea_id: ideaId });
      await ideaChanged(ideaId, 'idea:updated');
    },
    /**
     * One vote per user and comment. `toggle` (POST): the active direction again removes the
     * vote, the other direction switches it. Otherwise (DELETE) the vote goes, or only a vote of
     * `voteType` when one is given.
     */
    async voteComment(auth: AuthContext, id: string, voteType: VoteType | null, mode: 'toggle' | 'remove'): Promise<IdeaComment> {
      const userId = requireUserId(auth);
      await knex.transaction(async (trx) => {
        const row = await repo.lockComment(id, trx);
        if (!row || row.deletedAt !== null) throw AppError.notFound(ideaMessages.commentNotFound);
        const current = await repo.commentVote(id, userId, trx);
        if (mode === 'toggle' && voteType !== null && current !== voteType) await repo.upsertCommentVote(id, userId, voteType, trx);
        else if (current !== undefined && (mode === 'toggle' || voteType === null || current === voteType)) await repo.deleteCommentVote(id, userId, trx);
        await repo.recountCommentVotes(id, trx);
      });
      const comment = await loadComment(id, userId);
      await publish([ideaBusChannel(comment.ideaId)], 'comment:voted', commentWire(comment));
      return comment;
    },

    // ------------------------------------------------------------------ categories and tags
    async categories(_auth: AuthContext): Promise<IdeaCategory[]> {
      return repo.categories();
    },
    async createCategory(_auth: AuthContext, input: CreateCategoryInput): Promise<IdeaCategory> {
      const name = input.name.trim();
      if (name.length < 1 || name.length > 100) throw validation('name', ideaMessages.invalidCategoryName);
      try {
        return await repo.insertCategory({ id: randomUUID(), name, description: input.description?.trim() || null, sort_order: input.sortOrder ?? 0 });
      } catch (error) {
        if (isUniqueViolation(error)) throw new AppError('CONFLICT', ideaMessages.categoryNameTaken);
        throw error;
      }
    },
    async updateCategory(_auth: AuthContext, id: string, input: UpdateCategoryInput): Promise<IdeaCategory> {
      const patch: { name?: string; description?: string | null; sort_order?: number } = {};
      if (input.name !== undefined) {
        patch.name = input.name.trim();
        if (patch.name.length < 1 || patch.name.length > 100) throw validation('name', ideaMessages.invalidCategoryName);
      }
      if (input.description !== undefined) patch.description = input.description?.trim() || null;
      if (input.sortOrder !== undefined) patch.sort_order = input.sortOrder;
      try {
        const row = await knex.transaction((trx) => repo.updateCategory(id, patch, trx));
        if (!row) throw AppError.notFound(ideaMessages.categoryNotFound);
        return row;
      } catch (error) {
        if (isUniqueViolation(error)) throw new AppError('CONFLICT', ideaMessages.categoryNameTaken);
        throw error;
      }
    },
    async deleteCategory(_auth: AuthContext, id: string): Promise<void> {
      if ((await repo.deleteCategory(id)) === 0) throw AppError.notFound(ideaMessages.categoryNotFound);
    },
    async tags(_auth: AuthContext, search: string | null | undefined): Promise<IdeaTag[]> {
      return repo.tags(search?.trim() || undefined, MAX_TAG_RESULTS);
    },
    async createTag(auth: AuthContext, input: CreateTagInput): Promise<{ tag: IdeaTag; created: boolean }> {
      const name = input.name.trim();
      if (name.length < 1 || name.length > 50) throw validation('name', ideaMessages.invalidTagName);
      return repo.insertTag({ id: randomUUID(), name, created_by: auth.userId ?? null });
    },
    async deleteTag(_auth: AuthContext, id: string): Promise<void> {
      if ((await repo.deleteTag(id)) === 0) throw AppError.notFound(ideaMessages.tagNotFound);
    },
  };
}

export type IdeasService = ReturnType<typeof createIdeasService>;
