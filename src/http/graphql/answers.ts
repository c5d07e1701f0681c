/**
 * GraphQL answers written once per change, as the REST dispatcher writes a shared answer's bytes
 * once (src/http/rest.ts).
 *
 * Below the root, every field is read from its parent by the default resolver (the schema has
 * resolvers for Query and Mutation alone) and every scalar serialises its value alone. A result
 * without errors thus depends on the operation (its text, name and variables) and on what its root
 * fields resolved to, nothing else. When those are shared answers (immutable, src/infra/shared.ts),
 * or plain values beside them, the text written the first time is kept beside the first shared one
 * and given to every request of the operation that resolves to the same values: a polled page is
 * serialised once per change. Held weakly by the shared value, so it goes when the value does.
 */
import type { ExecutionResult } from 'graphql';
import { isShared } from '../../infra/shared';

/** A written answer and the root values it was written from. */
interface KeptAnswer {
  readonly roots: ReadonlyMap<string, unknown>;
  readonly text: string;
}

/** One operation's written answers, per shared root value. */
export type KeptAnswers = WeakMap<object, KeptAnswer>;

/**
 * The JSON text of `result` (a result without errors), for an operation with kept `answers` whose
 * root fields resolved to `roots` (response key to value).
 */
export function answerText(result: ExecutionResult, answers: KeptAnswers, roots: ReadonlyMap<string, unknown>): string {
  const anchor = anchorOf(roots);
  if (!anchor) return JSON.stringify(result);
  const kept = answers.get(anchor);
  if (kept && sameRoots(kept.roots, roots)) return kept.text;
  const text = JSON.stringify(result);
  answers.set(anchor, { roots, text });
  return text;
}

/** The first shared root value, when every object among the root values is shared. */
function anchorOf(roots: ReadonlyMap<string, unknown>): object | undefined {
  let anchor: object | undefined;
  for (const value of roots.values()) {
    if (typeof value !== 'object' || value === null) continue;
    if (!isShared(value)) return undefined;
    anchor ??= value;
  }
  return anchor;
}

function sameRoots(a: ReadonlyMap<string, unknown>, b: ReadonlyMap<string, unknown>): boolean {
  if (a.size !== b.size) return false;
  for (const [key, value] of a) if (!b.has(key) || b.get(key) !== value) return false;
  return true;
}
