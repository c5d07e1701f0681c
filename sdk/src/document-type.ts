/**
 * The type mark of a typed GraphQL document, as @graphql-typed-document-node/core declares it:
 * TypedDocumentNode (GraphQL Code Generator, graphql-tag, Apollo) and TypedDocumentString carry
 * it, and TypeScript matches it by shape, so their documents are accepted as they are. Declared
 * here rather than imported: that package's peer dependency would install `graphql` (3 MB) into
 * every consumer for one type.
 */
export interface DocumentTypeDecoration<TResult, TVariables> {
  /** Never set at run time; it carries the result and variables types. */
  __apiType?: (variables: TVariables) => TResult;
}

/** The result type of a typed document (as the package's `ResultOf`). */
export type ResultOf<T> = T extends DocumentTypeDecoration<infer TResult, never> ? TResult : never;
/** The variables type of a typed document (as the package's `VariablesOf`). */
export type VariablesOf<T> = T extends DocumentTypeDecoration<unknown, infer TVariables> ? TVariables : never;
