/**
 * The ideas board's tables (Part 2, "Ideas board"): categories, tags, ideas with their tag links,
 * votes and status timeline, nested comments and comment votes. Vote and comment counts live on
 * their parent row (recounted inside the writing transaction, under the parent's row lock) so the
 * four sorts use plain indexes. Full-text search: a stored generated `tsvector` over title and
 * description with a GIN index (PostgreSQL and the embedded PGlite both have text search).
 */
import type { Knex } from 'knex';
import type { Migration } from '../../infra/db/database';

export const ideasMigrations: readonly Migration[] = [
  {
    name: '20261123105815_ideas_board',
    async up(knex: Knex) {
      await knex.schema.createTable('idea_categories', (t) => {
        t.uuid('id').primary();
        t.string('name', 100).notNullable();
        t.string('description', 500).nullable();
        t.integer('sort_order').notNullable().defaultTo(0);
        t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
        t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
      });
      await knex.raw('create unique index idea_categories_name_unique on idea_categories (lower(name))');
      await knex.schema.createTable('idea_tags', (t) => {
        t.uuid('id').primary();
        t.string('name', 50).notNullable();
        t.uuid('created_by').nullable().references('users.id').onDelete('SET NULL');
        t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
      });
      await knex.raw('create unique index idea_tags_name_unique on idea_tags (lower(name))');
      await knex.schema.createTable('ideas', (t) => {
        t.uuid('id').primary();
        t.uuid('author_id').nullable().references('users.id').onDelete('SET NULL');
        t.string('title', 200).notNullable();
        t.text('description').notNullable();
        t.string('status', 40).notNullable().defaultTo('open');
        t.uuid('category_id').nullable().references('idea_categories.id').onDelete('SET NULL');
        t.integer('vote_count_up').notNullable().defaultTo(0);
        t.integer('vote_count_down').notNullable().defaultTo(0);
        t.integer('comment_count').notNullable().defaultTo(0);
        t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
        t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
      });
      await knex.raw(
        "alter table ideas add column search tsvector generated always as (to_tsvector('english', title || ' ' || description)) stored",
      );
      await knex.raw('create index ideas_search_idx on ideas using gin (search)');
      await knex.raw('create index ideas_newest_idx on ideas (created_at desc, id desc)');
      await knex.raw('create index ideas_voted_idx on ideas ((vote_count_up - vote_count_down) desc, created_at desc, id desc)');
      await knex.raw('create index ideas_commented_idx on ideas (comment_count desc, created_at desc, id desc)');
      await knex.raw('create index ideas_updated_idx on ideas (updated_at desc, id desc)');
      await knex.raw('create index ideas_status_idx on ideas (status, created_at desc)');
      await knex.raw('create index ideas_category_idx on ideas (category_id)');
      await knex.raw('create index ideas_author_idx on ideas (author_id)');
      await knex.schema.createTable('idea_tag_links', (t) => {
        t.uuid('idea_id').notNullable().references('ideas.id').onDelete('CASCADE');
        t.uuid('tag_id').notNullable().references('idea_tags.id').onDelete('CASCADE');
        t.primary(['idea_id', 'tag_id']);
        t.index(['tag_id'], 'idea_tag_links_tag_idx');
      });
      await knex.schema.createTable('idea_votes', (t) => {
        t.uuid('idea_id').notNullable().references('ideas.id').onDelete('CASCADE');
        t.uuid('user_id').notNullable().references('users.id').onDelete('CASCADE');
        t.string('vote_type', 4).notNullable();
        t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
        t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
        t.primary(['idea_id', 'user_id']);
        t.index(['user_id'], 'idea_votes_user_idx');
      });
      await knex.raw("alter table idea_votes add constraint idea_votes_type_check check (vote_type in ('up', 'down'))");
      await knex.schema.createTable('idea_timeline', (t) => {
        t.uuid('id').primary();
        t.uuid('idea_id').notNullable().references('ideas.id').onDelete('CASCADE');
        t.string('event_type', 40).notNullable();
        t.uuid('actor_id').nullable().references('users.id').onDelete('SET NULL');
        t.string('from_status', 40).nullable();
        t.string('to_status', 40).notNullable();
        t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
        t.index(['idea_id', 'created_at'], 'idea_timeline_idea_idx');
      });
      await knex.schema.createTable('idea_comments', (t) => {
        t.uuid('id').primary();
        t.uuid('idea_id').notNullable().references('ideas.id').onDelete('CASCADE');
        t.uuid('parent_id').nullable().references('idea_comments.id').onDelete('CASCADE');
        t.uuid('author_id').nullable().references('users.id').onDelete('SET NULL');
        t.text('body').notNullable();
        t.jsonb('mentions').notNullable().defaultTo('[]');
        t.integer('vote_count_up').notNullable().defaultTo(0);
        t.integer('vote_count_down').notNullable().defaultTo(0);
        t.timestamp('deleted_at', { useTz: true }).nullable();
        t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
        t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
        t.index(['idea_id', 'created_at'], 'idea_comments_idea_idx');
        t.index(['parent_id'], 'idea_comments_parent_idx');
        t.index(['author_id'], 'idea_comments_author_idx');
      });
      await knex.schema.createTable('idea_comment_votes', (t) => {
        t.uuid('comment_id').notNullable().references('idea_comments.id').onDelete('CASCADE');
        t.uuid('user_id').notNullable().references('users.id').onDelete('CASCADE');
        t.string('vote_type', 4).notNullable();
        t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
        t.primary(['comment_id', 'user_id']);
        t.index(['user_id'], 'idea_comment_votes_user_idx');
      });
      await knex.raw("alter table idea_comment_votes add constraint idea_comment_votes_type_check check (vote_type in ('up', 'down'))");
    },
    async down(knex: Knex) {
      for (const table of ['idea_comment_votes', 'idea_comments', 'idea_timeline', 'idea_votes', 'idea_tag_links', 'ideas', 'idea_tags', 'idea_categories']) {
        await knex.schema.dropTableIfExists(table);
      }
    },
  },
  {
    // Part 2 gates category writes and category and tag deletion on admin `ideas:edit` /
    // `ideas:delete` (they had been gated on `ideas:moderate_edit` / `ideas:moderate_delete`).
    // The seeded super-admin holds every admin permission, so it gets both; an admin role that
    // could do these writes through the moderation grant keeps that ability under the new name.
    // The strings are spelled out so a later registry edit cannot change what this migration did.
    name: '20261125220000_admin_ideas_edit_delete',
    async up(knex: Knex) {
      const roles = (await knex('admin_roles').select('id', 'name', 'permissions')) as { id: string; name: string; permissions: string[] }[];
      for (const role of roles) {
        const held = new Set(role.permissions);
        const add: string[] = [];
        if (role.name === 'super-admin' || held.has('ideas:moderate_edit')) add.push('ideas:edit');
        if (role.name === 'super-admin' || held.has('ideas:moderate_delete')) add.push('ideas:delete');
        const missing = add.filter((p) => !held.has(p));
        if (missing.length === 0) continue;
        await knex('admin_roles').where({ id: role.id }).update({ permissions: JSON.stringify([...role.permissions, ...missing]), updated_at: knex.fn.now() });
      }
    },
    async down(knex: Knex) {
      const roles = (await knex('admin_roles').select('id', 'permissions')) as { id: string; permissions: string[] }[];
      for (const role of roles) {
        const kept = role.permissions.filter((p) => p !== 'ideas:edit' && p !== 'ideas:delete');
        if (kept.length !== role.permissions.length) await knex('admin_roles').where({ id: role.id }).update({ permissions: JSON.stringify(kept) });
      }
    },
  },
];
