/**
 * The GraphQL document limits of `config.graphql`, checked before execution: brace nesting (a
 * cheap scan before parsing, so no document can exhaust the parser's recursion), lexical tokens
 * (graphql-js's `maxTokens`), then aliases, depth and directives (graphql-armor's validation
 * rules), and introspection when it is off. Owns the messages of those refusals; the endpoint
 * answers them with HTTP 400 BAD_REQUEST. Cost is src/http/graphql/cost.ts's.
 */
import { maxAliasesRule } from '@escape.tech/graphql-armor-max-aliases';
import { maxDepthRule } from '@escape.tech/graphql-armor-max-depth';
import { maxDirectivesRule } from '@escape.tech/graphql-armor-max-directives';
import { GraphQLError, parse, type ASTVisitor, type DocumentNode, type ValidationContext, type ValidationRule } from 'graphql';
import type { Config } from '../../config/config';
import { messages } from '../../errors';

export interface GraphQLLimits {
  maxDepth: number;
  maxAliases: number;
  maxDirectives: number;
  maxTokens: number;
  maxCost: number;
  /** Off: `__schema` and `__type` are refused and "Did you mean" suggestions are dropped. */
  introspection: boolean;
}

export function graphqlLimits(config: Readonly<Config>): GraphQLLimits {
  const g = config.graphql;
  return {
    maxDepth: g.max_depth,
    maxAliases: g.max_aliases,
    maxDirectives: g.max_directives,
    maxTokens: g.max_tokens,
    maxCost: g.max_cost,
    introspection: g.introspection,
  };
}

/**
 * How deep `{`, `(` and `[` may nest in the source before parsing is refused. graphql-js parses
 * recursively, so a depth-5000 document overflows the stack inside `parse` (before any validation
 * rule runs) and the token limit alone does not prevent it. The bound is loose (inline fragments,
 * argument objects and lists nest too), and the depth rule gives the exact answer below it.
 */
export function nestingLimit(limits: GraphQLLimits): number {
  return Math.max(64, 4 * limits.maxDepth);
}

/**
 * The deepest nesting of `{`, `(` and `[` in a GraphQL source, skipping strings, block strings and
 * comments; stops scanning once it passes `stopAbove`. Linear and allocation-free.
 */
export function maxNesting(source: string, stopAbove = Infinity): number {
  let depth = 0;
  let max = 0;
  const n = source.length;
  for (let i = 0; i < n; i++) {
    const c = source.charCodeAt(i);
    if (c === 0x7b /* { */ || c === 0x28 /* ( */ || c === 0x5b /* [ */) {
      depth++;
      if (depth > max) {
        max = depth;
        if (max > stopAbove) return max;
      }
    } else if (c === 0x7d /* } */ || c === 0x29 /* ) */ || c === 0x5d /* ] */) {
      if (depth > 0) depth--;
    } else if (c === 0x23 /* # */) {
      while (i + 1 < n && source.charCodeAt(i + 1) !== 0x0a && source.charCodeAt(i + 1) !== 0x0d) i++;
    } else if (c === 0x22 /* " */) {
      if (source.startsWith('"""', i)) {
        // Block string: ends at the next """ not escaped as \""".
        i += 3;
        while (i < n && !(source.startsWith('"""', i) && source.charCodeAt(i - 1) !== 0x5c)) i++;
        i += 2;
      } else {
        // String: ends at an unescaped " or at a line break (where the parser will refuse it).
        i++;
        while (i < n) {
          const d = source.charCodeAt(i);
          if (d === 0x5c /* \ */) i += 2;
          else if (d === 0x22 || d === 0x0a || d === 0x0d) break;
          else i++;
        }
      }
    }
  }
  return max;
}

/** A refusal because of a limit (HTTP 400 whatever the Accept header), not a malformed request. */
export class GraphQLLimitError extends GraphQLError {}

/**
 * Parses a document within the nesting and token limits. Syntax errors are graphql-js's; limit
 * refusals are ours (GraphQLLimitError).
 */
export function parseWithinLimits(query: string, limits: GraphQLLimits): DocumentNode {
  if (maxNesting(query, nestingLimit(limits)) > nestingLimit(limits)) throw new GraphQLLimitError(messages.graphqlDepthLimit(limits.maxDepth));
  try {
    return parse(query, { maxTokens: limits.maxTokens });
  } catch (error) {
    // graphql-js 16 spells it "more that"; accept the corrected spelling of later releases too.
    if (error instanceof GraphQLError && /^Syntax Error: Document contains more th(?:an|at) \d+ tokens/.test(error.message)) {
      throw new GraphQLLimitError(messages.graphqlTokenLimit(limits.maxTokens));
    }
    throw error;
  }
}

/** graphql-armor reports through a callback; the refusal carries our message, not its "Syntax Error: …". */
function refuseWith(message: string) {
  return {
    exposeLimits: false,
    propagateOnRejection: false,
    onReject: [(context: ValidationContext | null) => context?.reportError(new GraphQLLimitError(message))],
  };
}

/** Refuses `__schema` and `__type` (`__typename` stays): the SDL stays downloadable at /v1/schema. */
export const noIntrospectionRule: ValidationRule = (context): ASTVisitor => ({
  Field(node) {
    if (node.name.value === '__schema' || node.name.value === '__type') {
      context.reportError(new GraphQLLimitError(messages.graphqlIntrospectionDisabled));
    }
  },
});

/**
 * The limit rules, run before graphql-js's own rules so an oversized document is refused before
 * the costlier checks (overlapping fields) see it. Depth counts fields only (fragments are
 * flattened); `__schema` is exempt from it, since the standard introspection query nests deeper
 * than any data query, and graphql-js's MaxIntrospectionDepthRule, the alias limit and its flat
 * cost bound it instead.
 */
export function limitRules(limits: GraphQLLimits): ValidationRule[] {
  const rules = [
    maxAliasesRule({ n: limits.maxAliases, allowList: [], ...refuseWith(messages.graphqlAliasLimit(limits.maxAliases)) }),
    maxDepthRule({ n: limits.maxDepth, ignoreIntrospection: true, flattenFragments: true, ...refuseWith(messages.graphqlDepthLimit(limits.maxDepth)) }),
    maxDirectivesRule({ n: limits.maxDirectives, ...refuseWith(messages.graphqlDirectiveLimit(limits.maxDirectives)) }),
  ] as unknown as ValidationRule[];
  return limits.introspection ? rules : [...rules, noIntrospectionRule];
}

/** Drops graphql-js's "Did you mean …?" hints (field, argument, type and enum value names) from a message. */
export function withoutSuggestions(message: string): string {
  return message.replace(/\s*Did you mean [^?]*\?/g, '');
}
