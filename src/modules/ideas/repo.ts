/**
 * Ideas board storage (knex). Each query carries a short name comment for slow-query logs. Writes
 * that change a count take the parent row's lock first (`lockIdea`, `lockComment`) and recount
 * from the vote or comment rows, so concurrent votes never lose an update.
 */
import type { Knex } from 'knex';
import { rowMapping, schemaRows, tableColumns, type RowValue } from '../../infra/db/rows';
import type { components } from '../../../generated/openapi';
import type { IdeaCategory, IdeaTag, IdeaTimelineItem, IdeaVoter, VoteType } from './types';

type Schemas = components['schemas'];

type Db = Knex | Knex.Transaction;

export type IdeaSort = 'newest' | 'most_voted' | 'most_commented' | 'recently_updated';

export interface IdeaQuery {
  status?: string;
  categoryId?: string;
  tagIds?: readonly string[];
  authorId?: string;
  search?: string;
  sort: IdeaSort;
}

const categoryOf = schemaRows('IdeaCategory');
const tagOf = schemaRows('IdeaTag');
const timelineOf = schemaRows('IdeaTimelineItem');
const voterOf = schemaRows('IdeaVoter', { from: { id: 'u.id', display_name: 'u.display_name', avatar_url: 'u.avatar_url', vote_type: 'v.vote_type', voted_at: 'v.updated_at' } });

/** A participant with the roles as stored (`author,voter`); the service orders them. */
const participantOf = schemaRows('IdeaParticipant', {
  omit: ['roles'],
  from: { id: 'u.id', display_name: 'u.display_name', avatar_url: 'u.avatar_url' },
  extra: { roles: { type: 'text', from: "string_agg(distinct p.role, ',')" } },
});

/**
 * A user as the board shows it (an idea's or comment's `author`, in domain form): null once the user is deleted. `id`
 * is the row's author column, `shown` the condition under which the author is shown at all.
 */
const userJson = (id: string, shown = 'true') =>
  `case when ${id} is not null and u.display_name is not null and ${shown} then json_build_object('id', ${id}, 'displayName', u.display_name, 'avatarUrl', u.avatar_url) end`;

/** An idea with its category, author, score and the viewer's vote (the service adds the tags). */
const ideaOf = schemaRows('Idea', {
  omit: ['tags', 'timeline'],
  from: {
    id: 'i.id',
    title: 'i.title',
    description: 'i.description',
    status: 'i.status',
    category_id: 'i.category_id',
    category: "case when i.category_id is not null and c.name is not null then json_build_object('id', i.category_id, 'name', c.name) end",
    author_id: 'i.author_id',
    author: userJson('i.author_id'),
    vote_count_up: 'i.vote_count_up',
    vote_count_down: 'i.vote_count_down',
    vote_score: '(i.vote_count_up - i.vote_count_down)',
    comment_count: 'i.comment_count',
    my_vote: 'v.vote_type',
    created_at: 'i.created_at',
    updated_at: 'i.updated_at',
  },
});
export type IdeaRecord = RowValue<typeof ideaOf>;

/** A comment with its author and the viewer's vote; a deleted one (a tombstone) keeps no author, body, mentions or vote. */
const live = 'm.deleted_at is null';
const commentOf = schemaRows('IdeaComment', {
  omit: ['replies'],
  from: {
    id: 'm.id',
    idea_id: 'm.idea_id',
    parent_id: 'm.parent_id',
    author_id: `case when ${live} then m.author_id end`,
    author: userJson('m.author_id', live),
    body: `case when ${live} then m.body else '' end`,
    mentions: `case when ${live} then m.mentions else '[]'::jsonb end`,
    vote_count_up: 'm.vote_count_up',
    vote_count_down: 'm.vote_count_down',
    my_vote: `case when ${live} then v.vote_type end`,
    is_deleted: `(not ${live})`,
    created_at: 'm.created_at',
    updated_at: 'm.updated_at',
  },
});
export type CommentRecord = RowValue<typeof commentOf>;

/** The locked rows a write checks (not a schema: the lock's own read, never answered). */
const lockedIdeaOf = rowMapping(tableColumns('ideas', ['id', 'author_id', 'status']));
const lockedCommentOf = rowMapping(tableColumns('idea_comments', ['id', 'idea_id', 'author_id', 'deleted_at']));

/** `%`, `_` and the escape character match literally inside an ILIKE pattern. */
const likeLiteral = (text: string) => text.replace(/[\\%_]/g, (c) => `\\${c}`);

const ORDER: Record<IdeaSort, string> = {
  newest: 'i.created_at desc, i.id desc',
  most_voted: '(i.vote_count_up - i.vote_count_down) desc, i.created_at desc, i.id desc',
  most_commented: 'i.comment_count desc, i.created_at desc, i.id desc',
  recently_updated: 'i.updated_at desc, i.id desc',
};

/** Never a user id: anonymous viewers join no vote. */
const NIL_UUID = '00000000-0000-0000-0000-000000000000';

/** A unique index refused the row (SQLSTATE 23505). */
export const isUniqueViolation = (error: unknown) => (error as { code?: unknown } | null)?.code === '23505';

const rowsOf = (result: unknown): Record<string, unknown>[] => (result as { rows?: Record<string, unknown>[] }).rows ?? (result as Record<string, unknown>[]);
const mapAll = <T>(mapping: { map(row: Record<string, unknown>): T }, rows: unknown): T[] => (rows as Record<string, unknown>[]).map((row) => mapping.map(row));
const mapOne = <T>(mapping: { map(row: Record<string, unknown>): T }, row: unknown): T | undefined => (row ? mapping.map(row as Record<string, unknown>) : undefined);

export function createIdeasRepo(knex: Knex) {
  /** The idea columns with category name, author and the viewer's vote. */
  function ideaQuery(db: Db, viewerId: string | null) {
    return db('ideas as i')
      .leftJoin('idea_categories as c', 'c.id', 'i.category_id')
      .leftJoin('users as u', 'u.id', 'i.author_id')
      .leftJoin('idea_votes as v', (j) => {
        j.on('v.idea_id', '=', 'i.id').andOnVal('v.user_id', '=', viewerId ?? NIL_UUID);
      })
      .select(db.raw(ideaOf.select));
  }

  function filtered(db: Db, q: IdeaQuery) {
    const query = db('ideas as i');
    if (q.status !== undefined) query.where('i.status', q.status);
    if (q.categoryId !== undefined) query.where('i.category_id', q.categoryId);
    if (q.authorId !== undefined) query.where('i.author_id', q.authorId);
    if (q.tagIds?.length) query.whereExists(db('idea_tag_links as l').select(db.raw('1')).whereRaw('l.idea_id = i.id').whereIn('l.tag_id', [...q.tagIds]));
    if (q.search) query.whereRaw("i.search @@ websearch_to_tsquery('english', ?)", [q.search]);
    return query;
  }

  function commentQuery(db: Db, viewerId: string | null) {
    return db('idea_comments as m')
      .leftJoin('users as u', 'u.id', 'm.author_id')
      .leftJoin('idea_comment_votes as v', (j) => {
        j.on('v.comment_id', '=', 'm.id').andOnVal('v.user_id', '=', viewerId ?? NIL_UUID);
      })
      .select(db.raw(commentOf.select));
  }

  return {
    // ------------------------------------------------------------------ ideas
    /** ideas.page: filtered, sorted, one page; the total of the filter */
    async page(q: IdeaQuery, viewerId: string | null, limit: number, offset: number): Promise<{ rows: IdeaRecord[]; total: number }> {
      const ids = filtered(knex, q).select('i.id');
      const [rows, count] = await Promise.all([
        ideaQuery(knex, viewerId).whereIn('i.id', ids).orderByRaw(ORDER[q.sort]).limit(limit).offset(offset),
        filtered(knex, q).count<{ count: string }[]>({ count: '*' }).first(),
      ]);
      return { rows: mapAll(ideaOf, rows), total: Number(count?.count ?? 0) };
    },
    /** ideas.byId */
    async idea(id: string, viewerId: string | null, db: Db = knex): Promise<IdeaRecord | undefined> {
      return mapOne(ideaOf, await ideaQuery(db, viewerId).where('i.id', id).first());
    },
    /** ideas.lock: the idea's author, under a row lock (undefined when absent) */
    async lockIdea(id: string, db: Db) {
      return mapOne(lockedIdeaOf, await db('ideas').where({ id }).forUpdate().first(db.raw(lockedIdeaOf.select)));
    },
    /** ideas.insert */
    async insertIdea(row: Pick<Schemas['Idea'], 'id' | 'author_id' | 'title' | 'description' | 'category_id'>, db: Db): Promise<void> {
      await db('ideas').insert(row);
    },
    /** ideas.update */
    async updateIdea(id: string, patch: Partial<{ title: string; description: string; category_id: string | null; status: string }>, db: Db): Promise<void> {
      await db('ideas').where({ id }).update({ ...patch, updated_at: db.fn.now() });
    },
    /** ideas.touch: updated_at only (a new comment) */
    async touchIdea(id: string, db: Db): Promise<void> {
      await db('ideas').where({ id }).update({ updated_at: db.fn.now() });
    },
    /** ideas.delete */
    async deleteIdea(id: string, db: Db): Promise<number> {
      return (await db('ideas').where({ id }).delete().returning('id')).length;
    },
    /** ideas.tags: the tags of several ideas, by idea, each list by name */
    async tagsOf(ideaIds: readonly string[], db: Db = knex): Promise<Map<string, IdeaTag[]>> {
      const byIdea = new Map<string, IdeaTag[]>();
      if (ideaIds.length === 0) return byIdea;
      const rows = (await db('idea_tag_links as l')
        .join('idea_tags as t', 't.id', 'l.tag_id')
        .whereIn('l.idea_id', [...ideaIds])
        .orderByRaw('lower(t.name), t.id')
        .select('l.idea_id', 't.id', 't.name', 't.created_at')) as { idea_id: string }[];
      for (const row of rows) {
        const list = byIdea.get(row.idea_id) ?? [];
        list.push(tagOf.map(row));
        byIdea.set(row.idea_id, list);
      }
      return byIdea;
    },
    /** ideas.setTags: replaces the idea's tag set */
    async setTags(ideaId: string, tagIds: readonly string[], db: Db): Promise<void> {
      await db('idea_tag_links').where({ idea_id: ideaId }).delete();
      if (tagIds.length) await db('idea_tag_links').insert(tagIds.map((tag_id) => ({ idea_id: ideaId, tag_id })));
    },
    /** ideas.timeline: oldest first */
    async timeline(ideaId: string, db: Db = knex): Promise<IdeaTimelineItem[]> {
      const rows = await db('idea_timeline').where({ idea_id: ideaId }).orderBy([{ column: 'created_at', order: 'asc' }, { column: 'id', order: 'asc' }]).select(db.raw(timelineOf.select));
      return mapAll(timelineOf, rows);
    },
    /** ideas.timelineInsert */
    async insertTimeline(row: Pick<Schemas['IdeaTimelineItem'], 'id' | 'event_type' | 'actor_id' | 'from_status' | 'to_status'> & { idea_id: string }, db: Db): Promise<void> {
      await db('idea_timeline').insert(row);
    },

    // ------------------------------------------------------------------ idea votes
    /** ideas.vote: sets the user's vote (one per user and idea) */
    async upsertIdeaVote(ideaId: string, userId: string, voteType: VoteType, db: Db): Promise<void> {
      await db('idea_votes')
        .insert({ idea_id: ideaId, user_id: userId, vote_type: voteType })
        .onConflict(['idea_id', 'user_id'])
        .merge({ vote_type: voteType, updated_at: db.fn.now() });
    },
    /** ideas.unvote */
    async deleteIdeaVote(ideaId: string, userId: string, db: Db): Promise<void> {
      await db('idea_votes').where({ idea_id: ideaId, user_id: userId }).delete();
    },
    /** ideas.recountVotes: from the vote rows (the caller holds the idea's lock) */
    async recountIdeaVotes(ideaId: string, db: Db): Promise<void> {
      await db.raw(
        `update ideas set
           vote_count_up = (select count(*) from idea_votes where idea_id = ? and vote_type = 'up'),
           vote_count_down = (select count(*) from idea_votes where idea_id = ? and vote_type = 'down')
         where id = ?`,
        [ideaId, ideaId, ideaId],
      );
    },
    /** ideas.voters: newest vote first */
    async voters(ideaId: string, limit: number, offset: number): Promise<{ rows: IdeaVoter[]; total: number }> {
      const [rows, count] = await Promise.all([
        knex('idea_votes as v')
          .join('users as u', 'u.id', 'v.user_id')
          .where('v.idea_id', ideaId)
          .orderBy([{ column: 'v.updated_at', order: 'desc' }, { column: 'u.id', order: 'asc' }])
          .limit(limit)
          .offset(offset)
          .select(knex.raw(voterOf.select)),
        knex('idea_votes').where({ idea_id: ideaId }).count<{ count: string }[]>({ count: '*' }).first(),
      ]);
      return { rows: mapAll(voterOf, rows), total: Number(count?.count ?? 0) };
    },
    /** ideas.participants: author, voters and commenters, each once with their roles */
    async participants(ideaId: string, search: string | undefined, limit: number) {
      const pattern = search ? `%${likeLiteral(search)}%` : null;
      const result = await knex.raw(
        `select ${participantOf.select}
           from (
             select author_id as user_id, 'author' as role from ideas where id = ? and author_id is not null
             union select user_id, 'voter' from idea_votes where idea_id = ?
             union select author_id, 'commenter' from idea_comments where idea_id = ? and author_id is not null and deleted_at is null
           ) p
           join users u on u.id = p.user_id
          where (?::text is null or u.display_name ilike ? escape '\\')
          group by u.id, u.display_name, u.avatar_url
          order by lower(u.display_name), u.id
          limit ?`,
        [ideaId, ideaId, ideaId, pattern, pattern ?? '', limit],
      );
      return mapAll(participantOf, rowsOf(result));
    },

    // ------------------------------------------------------------------ comments
    /** comments.ofIdea: every comment of the idea, oldest first */
    async comments(ideaId: string, viewerId: string | null): Promise<CommentRecord[]> {
      return mapAll(commentOf, await commentQuery(knex, viewerId).where('m.idea_id', ideaId).orderBy([{ column: 'm.created_at', order: 'asc' }, { column: 'm.id', order: 'asc' }]));
    },
    /** comments.byId */
    async comment(id: string, viewerId: string | null, db: Db = knex): Promise<CommentRecord | undefined> {
      return mapOne(commentOf, await commentQuery(db, viewerId).where('m.id', id).first());
    },
    /** comments.lock */
    async lockComment(id: string, db: Db) {
      return mapOne(lockedCommentOf, await db('idea_comments').where({ id }).forUpdate().first(db.raw(lockedCommentOf.select)));
    },
    /** comments.insert */
    async insertComment(row: Pick<Schemas['IdeaComment'], 'id' | 'idea_id' | 'parent_id' | 'author_id' | 'body' | 'mentions'>, db: Db): Promise<void> {
      await db('idea_comments').insert({ ...row, mentions: JSON.stringify(row.mentions) });
    },
    /** comments.updateBody */
    async updateComment(id: string, body: string, mentions: string[], db: Db): Promise<void> {
      await db('idea_comments').where({ id }).update({ body, mentions: JSON.stringify(mentions), updated_at: db.fn.now() });
    },
    /** comments.hasReplies */
    async hasReplies(id: string, db: Db): Promise<boolean> {
      return Boolean(await db('idea_comments').where({ parent_id: id }).first('id'));
    },
    /** comments.tombstone: keeps the row (it has replies), drops its content and votes */
    async tombstoneComment(id: string, db: Db): Promise<void> {
      await db('idea_comment_votes').where({ comment_id: id }).delete();
      await db('idea_comments').where({ id }).update({ body: '', mentions: '[]', author_id: null, vote_count_up: 0, vote_count_down: 0, deleted_at: db.fn.now(), updated_at: db.fn.now() });
    },
    /** comments.delete */
    async deleteComment(id: string, db: Db): Promise<void> {
      await db('idea_comments').where({ id }).delete();
    },
    /** ideas.recountComments: comments not deleted (the caller holds the idea's lock) */
    async recountComments(ideaId: string, db: Db): Promise<void> {
      await db.raw('update ideas set comment_count = (select count(*) from idea_comments where idea_id = ? and deleted_at is null) where id = ?', [ideaId, ideaId]);
    },
    /** comments.myVote */
    async commentVote(commentId: string, userId: string, db: Db): Promise<VoteType | undefined> {
      const row = await db('idea_comment_votes').where({ comment_id: commentId, user_id: userId }).first('vote_type');
      return row?.vote_type as VoteType | undefined;
    },
    /** comments.vote */
    async upsertCommentVote(commentId: string, userId: string, voteType: VoteType, db: Db): Promise<void> {
      await db('idea_comment_votes').insert({ comment_id: commentId, user_id: userId, vote_type: voteType }).onConflict(['comment_id', 'user_id']).merge({ vote_type: voteType });
    },
    /** comments.unvote */
    async deleteCommentVote(commentId: string, userId: string, db: Db): Promise<void> {
      await db('idea_comment_votes').where({ comment_id: commentId, user_id: userId }).delete();
    },
    /** comments.recountVotes (the caller holds the comment's lock) */
    async recountCommentVotes(commentId: string, db: Db): Promise<void> {
      await db.raw(
        `update idea_comments set
           vote_count_up = (select count(*) from idea_comment_votes where comment_id = ? and vote_type = 'up'),
           vote_count_down = (select count(*) from idea_comment_votes where comment_id = ? and vote_type = 'down')
         where id = ?`,
        [commentId, commentId, commentId],
      );
    },

    // ------------------------------------------------------------------ categories and tags
    /** categories.all */
    async categories(): Promise<IdeaCategory[]> {
      return mapAll(categoryOf, await knex('idea_categories').orderByRaw('sort_order, lower(name), id').select(knex.raw(categoryOf.select)));
    },
    /** categories.byId */
    async category(id: string, db: Db = knex): Promise<IdeaCategory | undefined> {
      return mapOne(categoryOf, await db('idea_categories').where({ id }).first(db.raw(categoryOf.select)));
    },
    /** categories.byName (case-insensitive) */
    async categoryByName(name: string, db: Db = knex): Promise<IdeaCategory | undefined> {
      return mapOne(categoryOf, await db('idea_categories').whereRaw('lower(name) = lower(?)', [name]).first(db.raw(categoryOf.select)));
    },
    /** categories.insert (a taken name throws a unique violation) */
    async insertCategory(row: Pick<Schemas['IdeaCategory'], 'id' | 'name' | 'description' | 'sort_order'>, db: Db = knex): Promise<IdeaCategory> {
      const [inserted] = await db('idea_categories').insert(row).returning('*');
      return categoryOf.map(inserted as Record<string, unknown>);
    },
    /** categories.update */
    async updateCategory(id: string, patch: Partial<Pick<Schemas['IdeaCategory'], 'name' | 'description' | 'sort_order'>>, db: Db): Promise<IdeaCategory | undefined> {
      const [row] = await db('idea_categories').where({ id }).update({ ...patch, updated_at: db.fn.now() }).returning('*');
      return mapOne(categoryOf, row);
    },
    /** categories.delete */
    async deleteCategory(id: string): Promise<number> {
      return (await knex('idea_categories').where({ id }).delete().returning('id')).length;
    },
    /** tags.search: by name, at most `limit` */
    async tags(search: string | undefined, limit: number): Promise<IdeaTag[]> {
      const query = knex('idea_tags').select(knex.raw(tagOf.select)).orderByRaw('lower(name), id').limit(limit);
      if (search) query.whereRaw("name ilike ? escape '\\'", [`%${likeLiteral(search)}%`]);
      return mapAll(tagOf, await query);
    },
    /** tags.existing: which of `ids` exist */
    async existingTags(ids: readonly string[], db: Db = knex): Promise<Set<string>> {
      if (ids.length === 0) return new Set();
      const rows = (await db('idea_tags').whereIn('id', [...ids]).select('id')) as { id: string }[];
      return new Set(rows.map((r) => r.id));
    },
    /** tags.insertOrGet: the new tag (created true) or the existing one of that name */
    async insertTag(row: Pick<Schemas['IdeaTag'], 'id' | 'name'> & { created_by: string | null }): Promise<{ tag: IdeaTag; created: boolean }> {
      try {
        const [inserted] = await knex('idea_tags').insert(row).returning('*');
        return { tag: tagOf.map(inserted as Record<string, unknown>), created: true };
      } catch (error) {
        if (!isUniqueViolation(error)) throw error;
      }
      const existing = mapOne(tagOf, await knex('idea_tags').whereRaw('lower(name) = lower(?)', [row.name]).first(knex.raw(tagOf.select)));
      if (!existing) throw new Error('tag insert conflicted but no stored tag was found');
      return { tag: existing, created: false };
    },
    /** tags.delete */
    async deleteTag(id: string): Promise<number> {
      return (await knex('idea_tags').where({ id }).delete().returning('id')).length;
    },
  };
}

export type IdeasRepo = ReturnType<typeof createIdeasRepo>;
