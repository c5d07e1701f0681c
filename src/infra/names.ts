/**
 * The one naming rule between the wire and the domain: the wire (REST, SQL columns) is
 * snake_case, the domain (services, GraphQL) camelCase. The type twins (`CamelCase`, `Camelize`)
 * derive a domain type from a generated wire type; `camelName` is their runtime twin. The REST
 * mapping (src/http/mapping.ts) and the row mapping (src/infra/db/rows.ts) both build on it.
 */

/** `user_id` → `userId`, as a type. */
export type CamelCase<S extends string> = S extends `${infer Head}_${infer Tail}` ? `${Head}${Capitalize<CamelCase<Tail>>}` : S;

/**
 * The domain form of a wire type: member names camelCased at every level, except inside
 * records with an index signature (opaque JSON), which stay as they are.
 */
export type Camelize<T> = T extends readonly (infer Item)[]
  ? Camelize<Item>[]
  : T extends object
    ? string extends keyof T
      ? T
      : { [K in keyof T as K extends string ? CamelCase<K> : K]: Camelize<T[K]> }
    : T;

/** `user_id` → `userId`: the runtime twin of `CamelCase`. */
export function camelName(wire: string): string {
  return wire.replace(/_([a-z0-9])/g, (_m, c: string) => c.toUpperCase());
}

/** A schema node of an OpenAPI document with its `$ref`s followed (undefined when one leads nowhere). */
export function resolveRef(node: unknown, doc: unknown): Record<string, unknown> | undefined {
  let current = node as Record<string, unknown> | undefined;
  for (let hops = 0; current && typeof current.$ref === 'string'; hops++) {
    if (hops > 32) throw new Error(`unresolvable $ref ${String(current.$ref)}`);
    current = (current.$ref as string)
      .replace(/^#\//, '')
      .split('/')
      .reduce<unknown>((acc, key) => (acc as Record<string, unknown> | undefined)?.[key], doc) as Record<string, unknown> | undefined;
  }
  return current;
}
