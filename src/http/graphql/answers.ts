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
 *
 * A query operation that had its answer kept also keeps how its root fields were resolved (the
 * plan): the next request resolves those alone, as execution would, and is answered with the kept
 * text when they resolve to the same values, without executing the operation.
 */
import type { ExecutionResult, GraphQLFieldResolver, GraphQLResolveInfo } from 'graphql';
import { forgetBeside, keepBeside, touchBeside } from '../../infra/kept';
import { isShared } from '../../infra/shared';
import type { GraphQLContext } from './context';

/** How one root field was resolved: its response key, its resolver (gate included), and what it was given. */
export interface RootCall {
  readonly key: string;
  readonly resolve: GraphQLFieldResolver<unknown, GraphQLContext>;
  readonly args: Record<string, unknown>;
  readonly info: GraphQLResolveInfo;
}

/** A written answer and the root values it was written from. */
interface KeptAnswer {
  readonly roots: ReadonlyMap<string, unknown>;
  readonly text: string;
  /** Its entry in the process's kept-bytes budget (src/infra/kept.ts). */
  readonly token: object;
}

/** One operation's written answers, per shared root value, and its root plan once one was kept. */
export class OperationAnswers {
  private readonly kept = new WeakMap<object, KeptAnswer>();
  /** Set for a query operation when an answer is kept; cleared when its roots stop being shared. */
  plan: readonly RootCall[] | null = null;

  constructor(private readonly query: boolean) {}

  /** The text kept for exactly these root values, if any. */
  lookup(roots: ReadonlyMap<string, unknown>): string | undefined {
    const anchor = anchorOf(roots);
    const kept = anchor && this.kept.get(anchor);
    if (!kept || !sameRoots(kept.roots, roots)) return undefined;
    touchBeside(kept.token);
    return kept.text;
  }

  /**
   * The JSON text of `result` (a result without errors) whose root fields resolved to `roots`
   * through `calls`; kept when every object among the root values is shared.
   */
  write(result: ExecutionResult, roots: ReadonlyMap<string, unknown>, calls: readonly RootCall[]): string {
    const anchor = anchorOf(roots);
    if (!anchor) {
      this.plan = null;
      return JSON.stringify(result);
    }
    const kept = this.kept.get(anchor);
    if (kept && sameRoots(kept.roots, roots)) return kept.text;
    const text = JSON.stringify(result);
    if (kept) forgetBeside(kept.token);
    const entry: KeptAnswer = { roots, text, token: {} };
    this.kept.set(anchor, entry);
    // The budget holds neither the text nor the root values, only how to forget them.
    const held = new WeakRef(anchor);
    const answers = this.kept;
    keepBeside(entry.token, 64 + text.length, () => {
      const at = held.deref();
      if (at && answers.get(at)?.token === entry.token) answers.delete(at);
    });
    if (this.query) this.plan = calls;
    return text;
  }
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
