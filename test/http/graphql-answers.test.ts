/**
 * The rules of a kept GraphQL answer (src/http/graphql/answers.ts): the text written for an
 * operation is given again only for the very same root values, all of them shared, and only a
 * query keeps the plan that resolves its root fields before execution.
 */
import type { ExecutionResult, GraphQLResolveInfo } from 'graphql';
import { OperationAnswers, type RootCall } from '../../src/http/graphql/answers';
import { markShared } from '../../src/infra/shared';

const result = (data: Record<string, unknown>): ExecutionResult => ({ data });
const roots = (entries: Record<string, unknown>) => new Map(Object.entries(entries));
const calls = (...keys: string[]): RootCall[] => keys.map((key) => ({ key, resolve: () => null, args: {}, info: {} as GraphQLResolveInfo }));

describe('a kept GraphQL answer', () => {
  test('is given again for the same shared root values', () => {
    const answers = new OperationAnswers(true);
    const page = markShared({ total: 1 });
    expect(answers.lookup(roots({ page }))).toBeUndefined();
    expect(answers.write(result({ page }), roots({ page }), calls('page'))).toBe('{"data":{"page":{"total":1}}}');
    expect(answers.lookup(roots({ page }))).toBe('{"data":{"page":{"total":1}}}');
    // The same values: the first text, whatever this result holds.
    expect(answers.write(result({ page: 'ignored' }), roots({ page }), calls('page'))).toBe('{"data":{"page":{"total":1}}}');
  });

  test('is written again when any root value differs, the first one staying', () => {
    const answers = new OperationAnswers(true);
    const page = markShared({ total: 1 });
    const members = markShared([{ id: 'a' }]);
    answers.write(result({ page, members }), roots({ page, members }), calls('page', 'members'));
    const more = markShared([{ id: 'a' }, { id: 'b' }]);
    expect(answers.lookup(roots({ page, members: more }))).toBeUndefined();
    expect(answers.write(result({ page, members: more }), roots({ page, members: more }), calls('page', 'members'))).toBe('{"data":{"page":{"total":1},"members":[{"id":"a"},{"id":"b"}]}}');
    expect(answers.write(result({ page, count: 2 }), roots({ page, count: 2 }), calls('page', 'count'))).toBe('{"data":{"page":{"total":1},"count":2}}');
    expect(answers.lookup(roots({ page, count: 3 }))).toBeUndefined();
    expect(answers.write(result({ page, count: 3 }), roots({ page, count: 3 }), calls('page', 'count'))).toBe('{"data":{"page":{"total":1},"count":3}}');
    expect(answers.lookup(roots({ page }))).toBeUndefined();
  });

  test('is never kept when a root value is an object nobody shared, and its plan is dropped', () => {
    const answers = new OperationAnswers(true);
    const page = markShared({ total: 1 });
    answers.write(result({ page }), roots({ page }), calls('page'));
    expect(answers.plan?.map((call) => call.key)).toEqual(['page']);
    const fresh = { n: 1 };
    expect(answers.write(result({ page, fresh }), roots({ page, fresh }), calls('page', 'fresh'))).toBe('{"data":{"page":{"total":1},"fresh":{"n":1}}}');
    expect(answers.plan).toBeNull();
    fresh.n = 2;
    expect(answers.lookup(roots({ page, fresh }))).toBeUndefined();
    expect(answers.write(result({ page, fresh }), roots({ page, fresh }), calls('page', 'fresh'))).toBe('{"data":{"page":{"total":1},"fresh":{"n":2}}}');
    expect(answers.write(result({ n: 2 }), roots({ n: 1 }), calls('n'))).toBe('{"data":{"n":2}}');
  });

  test('keeps a plan for a query only', () => {
    const page = markShared({ total: 1 });
    const mutation = new OperationAnswers(false);
    mutation.write(result({ page }), roots({ page }), calls('page'));
    expect(mutation.plan).toBeNull();
    expect(mutation.lookup(roots({ page }))).toBe('{"data":{"page":{"total":1}}}');
  });
});
