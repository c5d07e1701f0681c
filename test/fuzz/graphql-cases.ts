/**
 * GraphQL cases for the edge fuzzer, generated from the SDL (generated/graphql-schema.ts): for
 * every Query and Mutation field, documents with valid, invalid and hostile arguments (inline or
 * as variables) and random selections, sometimes multiplied by aliases; plus three free targets:
 * documents beyond any sane limit (alias, depth, directive, token and fragment bombs), malformed
 * request envelopes, and token soup. A new field in spec/graphql/ is a new target with no
 * new code.
 */
import fc from 'fast-check';
import {
  buildSchema,
  getNamedType,
  getNullableType,
  isEnumType,
  isInputObjectType,
  isListType,
  isNonNullType,
  isObjectType,
  isScalarType,
  type GraphQLField,
  type GraphQLInputType,
  type GraphQLObjectType,
  type GraphQLOutputType,
} from 'graphql';
import { fieldGates, typeDefs } from '../../generated/graphql-schema';
import { credentialChoice, credentialFor, type CredentialChoice } from './cast';
import { deepJson, hostileNumberText, hostileString, hostileValue, pollutingObject, rarely, raw, secretRefs, serialise, uuidValue, vocabulary, ref, type RawJson } from './values';

export interface GraphqlCase {
  kind: 'graphql';
  target: string;
  credential: CredentialChoice;
  /** The request body as sent (JSON with `⟨ref:…⟩` markers, or anything else for envelope cases). */
  body: string;
  contentType: string | null;
  /** Extra query string (`?query=` on a POST, say); the credential's `?token=` is added at send time. */
  search?: string;
}

export const schema = buildSchema(typeDefs);
const rootTypes = [schema.getQueryType()!, schema.getMutationType()!];

// ------------------------------------------------------------------ input values

/** Timestamps from a decade ago to a decade ahead (expiries, `from`/`to` filters). */
const timestamp = fc.date({ min: new Date(Date.now() - 3.15e11), max: new Date(Date.now() + 3.15e11), noInvalidDate: true }).map((d) => d.toISOString());

function validInput(type: GraphQLInputType, depth = 0, name = ''): fc.Arbitrary<unknown> {
  const required = isNonNullType(type);
  const inner = getNullableType(type) as GraphQLInputType;
  let base: fc.Arbitrary<unknown>;
  if (isListType(inner)) base = fc.array(validInput(inner.ofType, depth + 1, name), { maxLength: 4 });
  else if (isEnumType(inner)) base = fc.constantFrom(...inner.getValues().map((v) => v.name));
  else if (isInputObjectType(inner)) {
    const fields = Object.values(inner.getFields());
    base =
      depth > 3
        ? fc.constant({})
        : fc.record(Object.fromEntries(fields.map((f) => [f.name, validInput(f.type, depth + 1, f.name)])), {
            requiredKeys: fields.filter((f) => isNonNullType(f.type) && f.defaultValue === undefined).map((f) => f.name),
          });
  } else if (isScalarType(inner)) {
    switch (inner.name) {
      case 'Int':
        return withNull(fc.integer({ min: -3, max: 250 }), required);
      case 'Float':
        return withNull(fc.double({ min: -3, max: 250, noNaN: true }), required);
      case 'Boolean':
        return withNull(fc.boolean(), required);
      case 'UUID':
      case 'ID':
        return withNull(uuidValue, required);
      case 'JSON':
        return withNull(fc.jsonValue({ maxDepth: 2 }), required);
      default:
        if (/At$|^(from|to)$/.test(name)) return withNull(timestamp, required);
        return withNull(fc.oneof(fc.constantFrom(...vocabulary), fc.string({ maxLength: 24 }), fc.constantFrom(...secretRefs.map(ref))), required);
    }
  } else base = fc.constant(null);
  return withNull(base, required);
}

const withNull = (arb: fc.Arbitrary<unknown>, required: boolean) => (required ? arb : fc.option(arb, { nil: null, freq: 6 }));

/**
 * A wrong value for `type`: of another type, or of the right type with hostile content; for an
 * input object, a valid object with one field made hostile (what reaches the service's storage).
 */
function hostileInput(type: GraphQLInputType, depth = 0): fc.Arbitrary<unknown> {
  const named = getNamedType(type);
  const numeric = named.name === 'Int' || named.name === 'Float';
  const options: fc.WeightedArbitrary<unknown>[] = [
    { arbitrary: hostileValue, weight: 3 },
    { arbitrary: numeric ? hostileNumberText.map(raw) : hostileString, weight: numeric ? 3 : 5 },
    { arbitrary: validInput(type), weight: 1 },
  ];
  const inner = getNullableType(type);
  if (isInputObjectType(inner) && depth < 3) {
    const fields = Object.values(inner.getFields());
    options.push({
      weight: 6,
      arbitrary: fc
        .tuple(validInput(type), fc.constantFrom(...fields))
        .chain(([v, f]) => hostileInput(f.type, depth + 1).map((bad) => ({ ...((v as object | null) ?? {}), [f.name]: bad }))),
    });
  }
  return fc.oneof(...options);
}

/** A GraphQL literal for a JSON-ish value (RawJson numbers are written verbatim). */
function literal(value: unknown): string {
  if (value && typeof value === 'object' && '$raw' in (value as object)) return (value as RawJson).$raw;
  if (Array.isArray(value)) return `[${value.map(literal).join(', ')}]`;
  if (value && typeof value === 'object') {
    return `{${Object.entries(value)
      .map(([k, v]) => `${/^[_A-Za-z][_0-9A-Za-z]*$/.test(k) ? k : 'badKey'}: ${literal(v)}`)
      .join(', ')}}`;
  }
  if (typeof value === 'string') return JSON.stringify(value);
  if (value === undefined) return 'null';
  return String(value);
}

// ------------------------------------------------------------------ selections

function selectionFor(type: GraphQLOutputType, depth: number): fc.Arbitrary<string> {
  const named = getNamedType(type);
  if (!isObjectType(named)) return fc.constant('');
  if (depth > 3) return fc.constant(' { __typename }');
  const fields = Object.values((named as GraphQLObjectType).getFields());
  const pick = fc.subarray(fields, { minLength: 1 }).chain((chosen) =>
    fc.tuple(...chosen.map((f) => fc.tuple(fc.constant(f.name), selectionFor(f.type, depth + 1), rarely(fc.constantFrom('a', 'b', 'x1'), 8)))),
  );
  const extras = fc.constantFrom('', '', ' __typename');
  return fc.tuple(pick, extras).map(([parts, extra]) => ` { ${parts.map(([name, sub, alias]) => `${alias ? `${alias}: ` : ''}${name}${sub}`).join(' ')}${extra} }`);
}

// ------------------------------------------------------------------ per-field documents

interface ArgPlan {
  name: string;
  type: string;
  mode: 'omit' | 'inline' | 'variable' | 'misdeclared' | 'undeclared';
  value: unknown;
}

interface FieldPlan {
  args: ArgPlan[];
  selection: string;
  aliases: number;
  keyword: string;
  credential: CredentialChoice;
  operationName?: string;
}

const aliasCount = fc.oneof({ arbitrary: fc.integer({ min: 2, max: 12 }), weight: 4 }, { arbitrary: fc.integer({ min: 50, max: 300 }), weight: 1 });

/**
 * A clean document (valid arguments inline or as variables, a selection of real fields, a
 * credential that passes the field's auth kind), then zero, one or two mutations: a hostile or
 * missing argument, a misdeclared or undeclared variable, the wrong operation keyword, aliases,
 * an operation name that is not there, any other credential.
 */
function fieldCase(root: GraphQLObjectType, field: GraphQLField<unknown, unknown>): fc.Arbitrary<GraphqlCase> {
  const keyword = root.name === 'Query' ? 'query' : 'mutation';
  const gate = fieldGates[`${root.name}.${field.name}`];
  const cleanArgs = fc.tuple(
    ...field.args.map((a) =>
      fc
        .tuple(fc.constantFrom<ArgPlan['mode']>('inline', 'variable'), validInput(a.type, 0, a.name))
        .map(([mode, value]): ArgPlan => ({ name: a.name, type: String(a.type), mode: isNonNullType(a.type) || value !== null ? mode : 'omit', value })),
    ),
  );
  type Mutation = (plan: FieldPlan) => FieldPlan;
  const mutations: fc.Arbitrary<Mutation>[] = [
    credentialChoice.map((credential): Mutation => (plan) => ({ ...plan, credential })),
    aliasCount.map((aliases): Mutation => (plan) => ({ ...plan, aliases })),
    fc.constantFrom(keyword === 'query' ? 'mutation' : 'query', '', 'subscription').map((kw): Mutation => (plan) => ({ ...plan, keyword: kw })),
    fc.constantFrom('Other', '', 'Fuzz'.repeat(1000)).map((operationName): Mutation => (plan) => ({ ...plan, operationName })),
    fc
      .constantFrom(' unknownField', ' __schema { queryType { name } }', ' ...on Query { __typename }', ' __typename(x: 1)', ' a: __typename a: __type(name: "Query") { name }')
      .map((extra): Mutation => (plan) => ({ ...plan, selection: plan.selection ? plan.selection.replace(/ \}$/, `${extra} }`) : ` {${extra} }` })),
  ];
  if (field.args.length) {
    const argAt = fc.integer({ min: 0, max: field.args.length - 1 });
    mutations.push(
      fc.tuple(argAt, fc.constantFrom<ArgPlan['mode']>('inline', 'variable'), fc.constant(null)).chain(([i, mode]) =>
        hostileInput(field.args[i]!.type).map((value): Mutation => (plan) => ({ ...plan, args: plan.args.map((a, j) => (j === i ? { ...a, mode, value } : a)) })),
      ),
      fc.tuple(argAt, fc.constantFrom<ArgPlan['mode']>('omit', 'misdeclared', 'undeclared')).map(([i, mode]): Mutation => (plan) => ({ ...plan, args: plan.args.map((a, j) => (j === i ? { ...a, mode } : a)) })),
    );
  }
  const count = fc.oneof({ arbitrary: fc.constant(0), weight: 5 }, { arbitrary: fc.constant(1), weight: 4 }, { arbitrary: fc.constant(2), weight: 1 });
  return fc
    .record({
      args: cleanArgs,
      selection: selectionFor(field.type, 0),
      credential: gate ? credentialFor(gate.auth) : credentialChoice,
      mutations: count.chain((n) => fc.array(fc.oneof(...mutations), { minLength: n, maxLength: n })),
    })
    .map(({ args, selection, credential, mutations: applied }) => {
      const plan = applied.reduce<FieldPlan>((p, m) => m(p), { args, selection, aliases: 1, keyword, credential });
      const declarations: string[] = [];
      const variables: Record<string, unknown> = {};
      const used = plan.args
        .filter((a) => a.mode !== 'omit')
        .map((a) => {
          if (a.mode === 'inline') return `${a.name}: ${literal(a.value)}`;
          if (a.mode === 'misdeclared') declarations.push(`$${a.name}: ${a.type.endsWith('!') ? 'String' : 'Int!'}`);
          else if (a.mode === 'variable') declarations.push(`$${a.name}: ${a.type}`);
          variables[a.name] = a.value;
          return `${a.name}: $${a.name}`;
        });
      const call = `${field.name}${used.length ? `(${used.join(', ')})` : ''}${plan.selection}`;
      const body = plan.aliases === 1 ? call : Array.from({ length: plan.aliases }, (_, i) => `f${i}: ${call}`).join('\n');
      const signature = declarations.length ? `(${declarations.join(', ')})` : '';
      const head = plan.keyword ? `${plan.keyword} Fuzz${signature} ` : signature ? `query Fuzz${signature} ` : '';
      const envelope: Record<string, unknown> = { query: `${head}{ ${body} }`, variables };
      if (plan.operationName !== undefined) envelope.operationName = plan.operationName;
      return { kind: 'graphql' as const, target: `graphql:${root.name}.${field.name}`, credential: plan.credential, body: serialise(envelope), contentType: 'application/json' };
    });
}

// ------------------------------------------------------------------ documents beyond limits

const heavyFields = [
  '__typename',
  '__schema { types { name fields { name } } }',
  'myAuditLog(filter: { limit: 200 }) { items { id metadata } total }',
  'notifications(limit: 100) { items { id data } }',
  'me { id email }',
  'myPermissions { permissions }',
  '__type(name: "Query") { fields { name args { name } } }',
];

function nest(open: (i: number) => string, close: string, depth: number, leaf: string): string {
  let out = '';
  for (let i = 0; i < depth; i++) out += open(i);
  return out + leaf + close.repeat(depth);
}

const bombs: fc.Arbitrary<string>[] = [
  // Many aliases of one field.
  fc.tuple(fc.constantFrom(...heavyFields), fc.oneof({ arbitrary: fc.integer({ min: 5, max: 40 }), weight: 6 }, { arbitrary: fc.integer({ min: 100, max: 600 }), weight: 3 }, { arbitrary: fc.integer({ min: 1000, max: 3000 }), weight: 1 }))
    .map(([f, n]) => `{ ${Array.from({ length: n }, (_, i) => `a${i}: ${f}`).join(' ')} }`),
  // Deep selections: valid (introspection ofType chains), unknown fields, nested inline fragments.
  fc.tuple(fc.constantFrom('ofType', 'unknown', 'fragment', 'me'), fc.constantFrom(8, 12, 20, 50, 200, 1000, 5000))
    .map(([shape, depth]) => {
      switch (shape) {
        case 'ofType':
          return `{ __schema { types { ${nest(() => 'ofType { ', '} ', depth, 'name ')}} } }`;
        case 'unknown':
          return `{ ${nest(() => 'a { ', '} ', depth, 'b ')}}`;
        case 'fragment':
          return `{ ${nest(() => '... on Query { ', '} ', depth, '__typename ')}}`;
        default:
          return `{ ${nest(() => '__type(name: "Query") { fields { type { ', '} } } ', depth, 'name ')}}`;
      }
    }),
  // Directives: many, unknown, repeated.
  fc.tuple(fc.constantFrom('@include(if: true)', '@skip(if: false)', '@unknown', '@gate(auth: "public")', '@deprecated'), fc.constantFrom(3, 50, 500, 5000))
    .map(([d, n]) => `{ __typename ${Array.from({ length: n }, () => d).join(' ')} }`),
  // Token floods.
  fc.constantFrom(20_000, 80_000).map((n) => `{ ${'__typename '.repeat(n)}}`),
  fc.constantFrom(1_000, 50_000).map((n) => `${'#\n'.repeat(n)}{ __typename }`),
  // Fragments: cycles, unused, exponential fan-out.
  fc.constantFrom(
    'query { ...A } fragment A on Query { ...B } fragment B on Query { ...A }',
    'query { ...A } fragment A on Query { ...A }',
    'query { __typename } fragment Unused on Query { __typename }',
  ),
  fc.constantFrom(4, 8, 12).map((k) => {
    const frags = [`fragment F0 on Query { me { id } }`];
    for (let i = 1; i <= k; i++) frags.push(`fragment F${i} on Query { ...F${i - 1} ...F${i - 1} }`);
    return `query { ...F${k} } ${frags.join(' ')}`;
  }),
  // Many operations in one document.
  fc.constantFrom(2, 100, 1000).map((n) => Array.from({ length: n }, (_, i) => `query Q${i} { __typename }`).join('\n')),
  // Huge and nested literals.
  fc.constantFrom(5, 100, 3000).map((d) => `{ notifications(page: ${'['.repeat(d)}1${']'.repeat(d)}) { total } }`),
  fc.constantFrom(5, 100, 3000).map((d) => `{ myAuditLog(filter: ${nest(() => '{ page: 1, type: ', '}', d, '"x"')}) { total } }`),
  fc.constantFrom('99999999999999999999', '9223372036854775807', '1e308', '-2147483649', '1.5', '0x10').map((n) => `{ notifications(page: ${n}, limit: ${n}) { total page } }`),
  fc.constantFrom(1_000, 500_000).map((n) => `{ __type(name: "${'x'.repeat(n)}") { name } }`),
  // Introspection.
  fc.constant('query IntrospectionQuery { __schema { queryType { name } mutationType { name } types { kind name fields(includeDeprecated: true) { name args { name type { name kind ofType { name kind } } } type { name kind ofType { name kind } } } inputFields { name } enumValues { name } } directives { name locations args { name } } } }'),
];

export const limitsCase: fc.Arbitrary<GraphqlCase> = fc
  .tuple(fc.oneof(...bombs), credentialChoice, rarely(deepJson, 5))
  .map(([query, credential, deepVariables]) => ({
    kind: 'graphql' as const,
    target: 'graphql:limits',
    credential,
    body: serialise(deepVariables ? { query, variables: { filter: deepVariables } } : { query }),
    contentType: 'application/json',
  }));

// ------------------------------------------------------------------ request envelopes

const envelopeShapes: fc.Arbitrary<{ body: string; contentType: string | null; search?: string }> = fc.oneof(
  fc.tuple(hostileValue, fc.constantFrom('query', 'variables', 'operationName', 'extensions')).map(([v, key]) => ({
    body: serialise(key === 'query' ? { query: v } : { query: '{ __typename }', [key]: v }),
    contentType: 'application/json',
  })),
  fc.constantFrom(
    '',
    '{}',
    'null',
    '[]',
    '[{"query":"{ __typename }"}]',
    '{"query":"{ __typename }"',
    '{"query":"{ __typename }","variables":"{}"}',
    '{"query":"{ __typename }","variables":[1]}',
    '{"query":"query($a: Int) { __typename }","variables":{"a":99999999999999999999}}',
    '{"query":"query($a: Int) { __typename }","variables":{"a":1e999}}',
    '{"query":"{ __typename }","__proto__":{"fuzzPolluted":"yes"}}',
    '{"query":"query($f: AuditLogFilter) { myAuditLog(filter: $f) { total } }","variables":{"f":{"__proto__":{"fuzzPolluted":"yes"},"page":1}}}',
    '{"query":"query($f: AuditLogFilter) { myAuditLog(filter: $f) { total } }","variables":{"f":{"constructor":{"prototype":{"fuzzPolluted":"yes"}}}}}',
    '{"query":"query($f: AuditLogFilter) { myAuditLog(filter: $f) { total } }","variables":{"f":{"type":"\\u0000"}}}',
    '{"query":"query($f: AuditLogFilter) { myAuditLog(filter: $f) { total } }","variables":{"f":{"type":"\\ud800"}}}',
    '{"query":"{ __typename }","operationName":"Missing"}',
    '{"query":"subscription { __typename }"}',
  ).map((body) => ({ body, contentType: 'application/json' })),
  fc.tuple(fc.constantFrom('application/graphql', 'text/plain', 'application/x-www-form-urlencoded', 'application/graphql-response+json', null), fc.constant('{ __typename }'))
    .map(([contentType, q]) => ({ body: contentType === 'application/x-www-form-urlencoded' ? `query=${encodeURIComponent(q)}` : contentType === 'application/graphql' ? q : serialise({ query: q }), contentType })),
  fc.constant({ body: serialise({ query: '{ __typename }' }), contentType: 'application/json', search: `query=${encodeURIComponent('{ me { id } }')}` }),
  pollutingObject.map((p: RawJson) => ({ body: `{"query":"query($f: AuditLogFilter) { myAuditLog(filter: $f) { total } }","variables":{"f":${p.$raw}}}`, contentType: 'application/json' })),
);

export const envelopeCase: fc.Arbitrary<GraphqlCase> = fc
  .tuple(envelopeShapes, credentialChoice)
  .map(([shape, credential]) => ({ kind: 'graphql' as const, target: 'graphql:envelopes', credential, ...shape }));

// ------------------------------------------------------------------ token soup

const fieldNames = [...new Set(rootTypes.flatMap((t) => Object.keys(t.getFields())))];
const soupTokens = ['{', '}', '(', ')', ':', '$', '...', '@', '!', '[', ']', '=', ',', 'query', 'mutation', 'subscription', 'fragment', 'on', '__typename', '__schema', '"\\u0000"', '"\\ud800"', '"""', '#', '1e308', 'true', 'null', ...fieldNames];

export const soupCase: fc.Arbitrary<GraphqlCase> = fc
  .tuple(
    fc.oneof(
      fc.array(fc.constantFrom(...soupTokens), { minLength: 1, maxLength: 30 }).map((ts) => ts.join(' ')),
      hostileString,
      fc.constantFrom(...fieldNames).map((f) => `{ ${f}(${f}: ${f}) { ${f} } }`),
    ),
    credentialChoice,
  )
  .map(([query, credential]) => ({ kind: 'graphql' as const, target: 'graphql:soup', credential, body: serialise({ query }), contentType: 'application/json' }));

export const graphqlTargets: readonly { name: string; arbitrary: fc.Arbitrary<GraphqlCase>; weight: number }[] = [
  ...rootTypes.flatMap((root) => Object.values(root.getFields()).map((field) => ({ name: `graphql:${root.name}.${field.name}`, arbitrary: fieldCase(root, field), weight: 1 }))),
  { name: 'graphql:limits', arbitrary: limitsCase, weight: 6 },
  { name: 'graphql:envelopes', arbitrary: envelopeCase, weight: 3 },
  { name: 'graphql:soup', arbitrary: soupCase, weight: 2 },
];
