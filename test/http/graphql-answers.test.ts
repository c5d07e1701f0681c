/**
 * The rules of a kept GraphQL answer (src/http/graphql/answers.ts): the text written for an
 * operation is given again only for the very same root values, all of them shared.
 */
import type { ExecutionResult } from 'graphql';
import { answerText, type KeptAnswers } from '../../src/http/graphql/answers';
import { markShared } from '../../src/infra/shared';

const result = (data: Record<string, unknown>): ExecutionResult => ({ data });
const roots = (entries: Record<string, unknown>) => new Map(Object.entries(entries));

describe('a kept GraphQL answer', () => {
  test('is given again for the same shared root values', () => {
    const answers: KeptAnswers = new WeakMap();
    const page = markShared({ total: 1 });
    expect(answerText(result({ page }), answers, roots({ page }))).toBe('{"data":{"page":{"total":1}}}');
    // The same values: the first text, whatever this result holds.
    expect(answerText(result({ page: 'ignored' }), answers, roots({ page }))).toBe('{"data":{"page":{"total":1}}}');
  });

  test('is written again when any root value differs, the first one staying', () => {
    const answers: KeptAnswers = new WeakMap();
    const page = markShared({ total: 1 });
    const members = markShared([{ id: 'a' }]);
    answerText(result({ page, members }), answers, roots({ page, members }));
    const more = markShared([{ id: 'a' }, { id: 'b' }]);
    expect(answerText(result({ page, members: more }), answers, roots({ page, members: more }))).toBe('{"data":{"page":{"total":1},"members":[{"id":"a"},{"id":"b"}]}}');
    expect(answerText(result({ page, count: 2 }), answers, roots({ page, count: 2 }))).toBe('{"data":{"page":{"total":1},"count":2}}');
    expect(answerText(result({ page, count: 3 }), answers, roots({ page, count: 3 }))).toBe('{"data":{"page":{"total":1},"count":3}}');
    expect(answerText(result({ page }), answers, roots({ page }))).toBe('{"data":{"page":{"total":1}}}');
  });

  test('is never kept when a root value is an object nobody shared', () => {
    const answers: KeptAnswers = new WeakMap();
    const page = markShared({ total: 1 });
    const fresh = { n: 1 };
    expect(answerText(result({ page, fresh }), answers, roots({ page, fresh }))).toBe('{"data":{"page":{"total":1},"fresh":{"n":1}}}');
    fresh.n = 2;
    expect(answerText(result({ page, fresh }), answers, roots({ page, fresh }))).toBe('{"data":{"page":{"total":1},"fresh":{"n":2}}}');
    expect(answerText(result({ n: 1 }), answers, roots({ n: 1 }))).toBe('{"data":{"n":1}}');
    expect(answerText(result({ n: 2 }), answers, roots({ n: 1 }))).toBe('{"data":{"n":2}}');
  });
});
