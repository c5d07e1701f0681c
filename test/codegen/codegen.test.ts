/**
 * codegen:check against a scratch copy of the project: it passes on the committed tree and fails
 * when spec/ changes without regenerating, when the parts of the OpenAPI document (spec/openapi/)
 * overlap or one is stray (a module's part may be a folder of files), when the parts of the
 * GraphQL schema (spec/graphql/) or of the WebSocket protocol (spec/ws-protocol/) overlap, share a
 * module's type or component, extend a type other than the roots, name nothing, or one is stray,
 * when an operation or field has no gate, when a migration changes and generated/tables.ts does not, when twins
 * declare different gates (resource grants included) or a resource grant stands in for no permission
 * or names no resource on a change, when a channel pattern has no gate kind or is shadowed by an earlier one, and when a relayed channel
 * has no complete relay entry.
 */
import { execFile } from 'node:child_process';
import { readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { codegen, edit, root, scratchCopy } from '../helpers/codegen-scratch';
import { publicOpenapiDocument } from '../../generated/openapi-document';

const run = promisify(execFile);

const check = (dir: string) => codegen(dir);

/** Applies a text change to every part of the OpenAPI document (spec/openapi/); at least one must change. */
function editOpenapi(dir: string, change: (text: string) => string): void {
  const parts = readdirSync(path.join(dir, 'spec/openapi'), { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.yaml'));
  let changed = 0;
  for (const part of parts) {
    const target = path.join(dir, 'spec/openapi', part);
    const before = readFileSync(target, 'utf8');
    const after = change(before);
    if (after !== before) {
      writeFileSync(target, after);
      changed += 1;
    }
  }
  if (changed === 0) throw new Error('edit of spec/openapi/ changed nothing');
}

// Each test runs codegen in a child process; on a busy shared machine one run takes minutes.
jest.setTimeout(300_000);

describe('npm run codegen:check', () => {
  const dirs: string[] = [];
  const fresh = () => {
    const dir = scratchCopy();
    dirs.push(dir);
    return dir;
  };
  afterAll(() => dirs.forEach((dir) => rmSync(dir, { recursive: true, force: true })));

  test('passes on the committed tree', async () => {
    const result = await check(fresh());
    expect(result.output).toContain('match spec/');
    expect(result.code).toBe(0);
  });

  test('fails when a part of spec/openapi/ changes without regenerating', async () => {
    const dir = fresh();
    editOpenapi(dir, (s) => s.replace('summary: The caller\'s effective permissions.', 'summary: Effective permissions of the caller.'));
    const result = await check(dir);
    expect(result.code).toBe(1);
    expect(result.output).toMatch(/generated\/openapi.*differs from what spec\/ produces/);
  });

  test('fails when the parts of spec/openapi/ define a path or component twice, share a module component, or a stray part appears', async () => {
    const dir = fresh();
    edit(dir, 'spec/openapi/modules/system.yaml', (s) => s.replace('paths:\n', 'paths:\n  /tokens/me:\n    get: { $ref: "#/components/schemas/IdeaCategory" }\n'));
    edit(dir, 'spec/openapi/modules/sounds.yaml', (s) => s.replace('components:\n  parameters:\n', 'components:\n  parameters:\n    Page: { name: page, in: query, schema: { type: string } }\n'));
    writeFileSync(path.join(dir, 'spec/openapi/extra.yaml'), 'paths: {}\n');
    const result = await check(dir);
    expect(result.code).toBe(1);
    expect(result.output).toContain('spec/openapi/modules/tokens.yaml: path /tokens/me is already defined in spec/openapi/modules/system.yaml');
    expect(result.output).toContain('spec/openapi/modules/sounds.yaml: component parameters.Page is already defined in spec/openapi/common.yaml');
    expect(result.output).toContain('spec/openapi/modules/ideas/taxonomy.yaml: #/components/schemas/IdeaCategory is also named from spec/openapi/modules/system.yaml');
    expect(result.output).toContain('spec/openapi/extra.yaml: not a part of the OpenAPI document');
  });

  test('fails when the parts of spec/graphql/ define a type or root field twice, share a module type, extend another type, or a stray part appears', async () => {
    const dir = fresh();
    const append = (file: string, text: string) => edit(dir, file, (s) => `${s}\n${text}\n`);
    append('spec/graphql/modules/events.graphql', 'extend type Query {\n  chatHistory(filter: ChatFilterInput): PaginatedChatResult! @gate(permission: "chat:read")\n}');
    append('spec/graphql/modules/sounds.graphql', 'type Event {\n  id: UUID!\n}');
    append('spec/graphql/modules/stats.graphql', 'extend type Sound {\n  plays: Int\n}');
    writeFileSync(path.join(dir, 'spec/graphql/extra.graphql'), 'type Extra {\n  id: ID\n}\n');
    const result = await check(dir);
    expect(result.code).toBe(1);
    expect(result.output).toContain('spec/graphql/extra.graphql: not a part of the GraphQL schema');
    expect(result.output).toContain('spec/graphql/modules/events.graphql: extends Query twice');
    expect(result.output).toContain('spec/graphql/modules/events.graphql: Query.chatHistory is already defined in spec/graphql/modules/chat.graphql');
    expect(result.output).toContain('spec/graphql/modules/chat.graphql: ChatFilterInput is also named from spec/graphql/modules/events.graphql');
    expect(result.output).toContain('spec/graphql/modules/sounds.graphql: Event is already defined in spec/graphql/modules/events.graphql');
    expect(result.output).toContain('spec/graphql/modules/stats.graphql: ObjectTypeExtension Sound is not allowed');
  });

  test("a module's folder may share components among its files but not with another module, and needs paths in every file", async () => {
    const dir = fresh();
    // IdeaTag is defined in ideas/board.yaml and named from ideas/taxonomy.yaml: the committed tree passes (first test).
    edit(dir, 'spec/openapi/modules/system.yaml', (s) => s.replace('paths:\n', 'paths:\n  /system/extra:\n    get: { $ref: "#/components/schemas/ExtensionInstallConfig" }\n'));
    writeFileSync(path.join(dir, 'spec/openapi/modules/ideas/empty.yaml'), 'components: {}\n');
    writeFileSync(path.join(dir, 'spec/openapi/modules/stats.yaml'), 'paths: {}\n');
    writeFileSync(path.join(dir, 'spec/openapi/modules/stats/notes.txt'), 'stray\n');
    const result = await check(dir);
    expect(result.code).toBe(1);
    expect(result.output).toContain('spec/openapi/modules/extensions/installs.yaml: #/components/schemas/ExtensionInstallConfig is also named from spec/openapi/modules/system.yaml');
    expect(result.output).not.toContain('#/components/schemas/IdeaTag is also named');
    expect(result.output).toContain('spec/openapi/modules/ideas/empty.yaml: declares no path');
    expect(result.output).toContain('spec/openapi/modules/stats/: the stats module is also given as spec/openapi/modules/stats.yaml; keep one form');
    expect(result.output).toContain('spec/openapi/modules/stats/notes.txt: not a part of the OpenAPI document');
  });

  test('fails when a generated file is edited by hand or a stray file appears', async () => {
    const dir = fresh();
    edit(dir, 'generated/parity.ts', (s) => `${s}\n// hand edit\n`);
    writeFileSync(path.join(dir, 'generated/extra.ts'), 'export {};\n');
    const result = await check(dir);
    expect(result.code).toBe(1);
    expect(result.output).toContain('generated/parity.ts differs');
    expect(result.output).toContain('generated/extra.ts is not produced by the specs');
  });

  test("fails when a module's migration changes without regenerating generated/tables.ts", async () => {
    const dir = fresh();
    edit(dir, 'src/modules/signin/migrations.ts', (s) => s.replace("t.string('provider', 40).notNullable();", "t.string('provider', 40).notNullable();\n        t.integer('tries').nullable();"));
    const result = await check(dir);
    expect(result.code).toBe(1);
    expect(result.output).toContain('generated/tables.ts differs');
    expect(result.output).not.toContain('generated/openapi.ts differs');
  });

  test('fails when a published document is edited by hand or a stray one appears', async () => {
    const dir = fresh();
    edit(dir, 'spec/published/openapi.json', (s) => s.replace('"securitySchemes": {', '"securitySchemes": {\n      "extra": { "type": "http", "scheme": "basic" },'));
    edit(dir, 'spec/published/schema.graphql', (s) => `${s}\n# hand edit\n`);
    writeFileSync(path.join(dir, 'spec/published/extra.json'), '{}\n');
    const result = await check(dir);
    expect(result.code).toBe(1);
    expect(result.output).toContain('spec/published/openapi.json differs from what spec/ produces');
    expect(result.output).toContain('spec/published/schema.graphql differs from what spec/ produces');
    expect(result.output).toContain('spec/published/extra.json is not produced by the specs');
  });

  test('fails when a REST operation declares no gate', async () => {
    const dir = fresh();
    editOpenapi(dir, (s) => s.replace(/(operationId: getSchema\n(?:.*\n)*?)\s+x-auth: public\n/, '$1\n'));
    const result = await check(dir);
    expect(result.code).toBe(1);
    expect(result.output).toContain('(getSchema): no gate');
  });

  test('fails when an OpenAPI link names no operation or does not fill its target path', async () => {
    const dir = fresh();
    editOpenapi(dir, (s) =>
      s
        .replace("operationId: adminDeleteSystemKey\n              parameters: { id: '$response.body#/data/id' }", 'operationId: noSuchOperation\n              parameters: { id: \'$response.body#/data/id\' }')
        .replace("operationId: revokeWidgetAccess\n              parameters: { id: '$request.path.id', access_id: '$response.body#/data/id' }", "operationId: revokeWidgetAccess\n              parameters: { id: '$request.path.id' }"),
    );
    const result = await check(dir);
    expect(result.code).toBe(1);
    expect(result.output).toContain('POST /admin/system-keys 201 link AdminDeleteSystemKey: operationId noSuchOperation names no operation');
    expect(result.output).toContain('POST /widgets/{id}/access 201 link RevokeWidgetAccess: parameters id must be the path parameters of /widgets/{id}/access/{access_id} (access_id, id)');
  });

  test('fails when a REST operation declares no x-envelope', async () => {
    const dir = fresh();
    editOpenapi(dir, (s) => s.replace('x-graphql: Query.myPermissions\n      x-envelope: { kind: single }\n', 'x-graphql: Query.myPermissions\n'));
    const result = await check(dir);
    expect(result.code).toBe(1);
    expect(result.output).toContain('GET /v1/tokens/me (myPermissions): no x-envelope (declare { kind: single | data | collection | bare | raw })');
  });

  test('fails when an x-envelope does not fit the response or its self link names no member of the data', async () => {
    const dir = fresh();
    editOpenapi(dir, (s) =>
      s
        .replace("x-envelope: { kind: single, self: '/v1/account/roles/{id}' }", "x-envelope: { kind: single, self: '/v1/account/roles/{role_id}' }")
        .replace('x-graphql: Query.account\n      x-envelope: { kind: single }', 'x-graphql: Query.account\n      x-envelope: { kind: collection }')
        .replace('x-envelope: { kind: raw }', 'x-envelope: { kind: single }')
        .replace('x-graphql: Query.me\n      x-envelope: { kind: single }', 'x-graphql: Query.me\n      x-envelope: { kind: envelope }'),
    );
    const result = await check(dir);
    expect(result.code).toBe(1);
    expect(result.output).toContain('(createAccountRole): x-envelope self placeholder {role_id} is not a member of the 201 body\'s data');
    expect(result.output).toContain('(account): x-envelope collection but the 200 body lacks _meta');
    expect(result.output).toContain('(getSchema): x-envelope single needs application/json (status 200 is text/plain; use raw)');
    expect(result.output).toContain('(me): x-envelope kind must be one of single, data, collection, bare, raw');
  });

  test('fails when a page or limit parameter lacks 32-bit bounds or a default', async () => {
    const dir = fresh();
    editOpenapi(dir, (s) =>
      s
        .replace('schema: { type: integer, format: int32, default: 1, minimum: -2147483648, maximum: 2147483647 }', 'schema: { type: integer, default: 1 }')
        .replace('schema: { type: integer, format: int32, default: 25, minimum: -2147483648, maximum: 2147483647 }', 'schema: { type: integer, minimum: 1, maximum: 9223372036854775807 }'),
    );
    const result = await check(dir);
    expect(result.code).toBe(1);
    expect(result.output).toContain('GET /v1/notifications (notifications): query parameter page needs an integer schema with minimum and maximum within 32 bits');
    expect(result.output).toContain('GET /v1/notifications (notifications): query parameter limit needs an integer schema with minimum and maximum within 32 bits');
    expect(result.output).toContain('GET /v1/me/audit-log (myAuditLog): query parameter page needs an integer schema with minimum and maximum within 32 bits');
  });

  test('fails when a GraphQL field declares no gate', async () => {
    const dir = fresh();
    edit(dir, 'spec/graphql/modules/tokens.graphql', (s) => s.replace('myPermissions: TokenPermissions! @gate(auth: "authenticated")', 'myPermissions: TokenPermissions!'));
    const result = await check(dir);
    expect(result.code).toBe(1);
    expect(result.output).toContain('Query.myPermissions: no @gate directive');
  });

  test('fails when twins declare different gates', async () => {
    const dir = fresh();
    edit(dir, 'spec/graphql/modules/tokens.graphql', (s) => s.replace('@gate(auth: "authenticated")', '@gate(permission: "events:read")'));
    const result = await check(dir);
    expect(result.code).toBe(1);
    expect(result.output).toMatch(/myPermissions: REST gate .* differs from Query\.myPermissions gate/);
  });

  test('fails when a mutation declares neither a permission nor a reason, or a reason says nothing', async () => {
    const dir = fresh();
    edit(dir, 'spec/openapi/modules/accounts.yaml', (s) => s.replace('      x-permission: account:delete\n      x-graphql: Mutation.dissolveAccount', '      x-graphql: Mutation.dissolveAccount'));
    edit(dir, 'spec/graphql/modules/accounts.graphql', (s) =>
      s
        .replace('@gate(auth: "first-party", permission: "account:delete")', '@gate(auth: "first-party")')
        .replace(`@gate(auth: "first-party", reason: "the caller's own profile")`, '@gate(auth: "first-party", reason: "n/a")'),
    );
    const result = await check(dir);
    expect(result.code).toBe(1);
    expect(result.output).toContain('DELETE /v1/account (dissolveAccount): a mutating operation must declare a permission, or say why none fits');
    expect(result.output).toContain('Mutation.dissolveAccount: a mutating operation must declare a permission, or say why none fits');
    expect(result.output).toContain('Mutation.updateMe: a gate reason must say why in words');
  });

  test('fails when twins declare different resource grants, a grant stands in for no permission, or a change names no id', async () => {
    const dir = fresh();
    edit(dir, 'spec/graphql/modules/overlays.graphql', (s) =>
      s
        .replace('widget(id: UUID!): Widget! @gate(permission: "widgets:read", resourceGrant: "widget-access:viewer"', 'widget(id: UUID!): Widget! @gate(permission: "widgets:read", resourceGrant: "widget-access:editor"')
        .replace('createWidget(input: CreateWidgetInput!): Widget! @gate(permission: "widgets:create"', 'createWidget(input: CreateWidgetInput!): Widget! @gate(permission: "widgets:create", resourceGrant: "widget-access:editor"'),
    );
    edit(dir, 'spec/graphql/modules/tokens.graphql', (s) => s.replace('myPermissions: TokenPermissions! @gate(auth: "authenticated")', 'myPermissions: TokenPermissions! @gate(auth: "authenticated", resourceGrant: "widget-access:viewer")'));
    const result = await check(dir);
    expect(result.code).toBe(1);
    expect(result.output).toMatch(/widget: REST gate .* differs from Query\.widget gate/);
    expect(result.output).toContain("Mutation.createWidget: a resource grant on a change needs the resource's `id`");
    expect(result.output).toContain('Query.myPermissions: a resource grant needs an account-scope permission it stands in for');
  });

  test('an operation marked x-internal is validated but left out of the published document', async () => {
    const dir = fresh();
    edit(dir, 'spec/openapi/modules/system.yaml', (text) =>
      text.replace(
        'paths:\n',
        [
          'paths:',
          '  /internal/feed:',
          '    post:',
          '      operationId: internalFeed',
          '      x-auth: system-key',
          '      x-gate-reason: "an internal feed any system key may post to"',
          '      x-internal: true',
          '      x-envelope: { kind: bare }',
          '      responses:',
          "        '204': { description: Accepted. }",
          '',
        ].join('\n'),
      ),
    );
    await run(process.execPath, [path.join(root, 'node_modules/tsx/dist/cli.mjs'), 'scripts/codegen.ts'], { cwd: dir });
    const { stdout } = await run(
      process.execPath,
      [
        path.join(root, 'node_modules/tsx/dist/cli.mjs'),
        '-e',
        "const d = require('./generated/openapi-document.ts'); console.log(JSON.stringify([Object.keys(d.openapiDocument.paths), Object.keys(d.publicOpenapiDocument.paths)]))",
      ],
      { cwd: dir },
    );
    const [all, published] = JSON.parse(stdout) as [string[], string[]];
    expect(all).toContain('/internal/feed');
    expect(published).not.toContain('/internal/feed');
    // Everything else is published as the project's own spec publishes it.
    expect(published).toEqual(Object.keys(publicOpenapiDocument.paths));
  });

  /** Edits the AsyncAPI document as JSON (it is pretty-printed: text replacements would be brittle). */
  const asyncapi = (text: string, change: (doc: any) => void): string => {
    const doc: unknown = JSON.parse(text);
    change(doc);
    return JSON.stringify(doc, null, 2);
  };

  test("fails when a platform's inbound contract (spec/platforms/) is incomplete or ambiguous", async () => {
    const dir = fresh();
    edit(dir, 'spec/platforms/platform_a.json', (s) =>
      asyncapi(s, (doc) => {
        delete doc.components.messages.notification_follow['x-ingest'];
        doc.components.messages.notification_cheer['x-match'] = { type: 'notification', event: 'raid' };
        doc.components.messages.notification_raid['x-ingest'].type = 'platform_b:raid';
      }),
    );
    const result = await check(dir);
    expect(result.code).toBe(1);
    expect(result.output).toContain('spec/platforms/platform_a.json message notification_follow: x-ingest.kind must be one of event, chat, moderation, treatment');
    expect(result.output).toMatch(/message notification_(cheer|raid): matches what notification_(cheer|raid) matches/);
    expect(result.output).toContain('message notification_raid: x-ingest.type must be a platform_a: event type');
  });

  test('fails when a channel pattern has no gate kind, or an earlier pattern takes its names', async () => {
    const dir = fresh();
    edit(dir, 'spec/ws-protocol/modules/connections.json', (s) => asyncapi(s, (doc) => (doc.channels.loginAssignments['x-gate'] = {})));
    // The run-time matcher tries channels in document order: ideas:{idea_id} first would take ideas:list.
    edit(dir, 'spec/ws-protocol/modules/ideas.json', (s) => asyncapi(s, (doc) => (doc.channels = { idea: doc.channels.idea, ideasList: doc.channels.ideasList })));
    const result = await check(dir);
    expect(result.code).toBe(1);
    expect(result.output).toContain('ws channel login-assignments:{id}: no gate kind');
    expect(result.output).toContain('ws channel ideas:list: never matched, ws channel ideas:{idea_id} comes first');
  });

  test('fails when the parts of spec/ws-protocol/ define a channel twice, share a module component, name nothing, or a stray part appears', async () => {
    const dir = fresh();
    edit(dir, 'spec/ws-protocol/modules/sounds.json', (s) =>
      asyncapi(s, (doc) => {
        doc.channels.chat = { address: 'chat:{account_id}' };
        doc.channels.sounds.messages.chatUpdate = { $ref: '#/components/messages/chatUpdate' };
        doc.channels.sounds.messages.nothing = { $ref: '#/components/messages/nothing' };
      }),
    );
    writeFileSync(path.join(dir, 'spec/ws-protocol/notes.json'), '{}\n');
    const result = await check(dir);
    expect(result.code).toBe(1);
    expect(result.output).toContain('spec/ws-protocol/notes.json: not a part of the WebSocket protocol');
    expect(result.output).toContain('spec/ws-protocol/modules/sounds.json: channels.chat is already defined in spec/ws-protocol/modules/chat.json');
    expect(result.output).toContain('spec/ws-protocol/modules/chat.json: #/components/messages/chatUpdate is also named from spec/ws-protocol/modules/sounds.json');
    expect(result.output).toContain('spec/ws-protocol/modules/sounds.json: $ref #/components/messages/nothing names nothing in the bundled document');
  });

  test('a frame names the REST resource it carries: a copy, a drifted copy, a stale derivation or a reference elsewhere fails with the file and field to edit', async () => {
    const dir = fresh();
    // A hand-written copy of the Overlay (what overlays.json held before it referenced the resource),
    // and a copy of the Widget that drifted (one field short).
    const overlay = publicOpenapiDocument.components.schemas.Overlay as { properties: Record<string, unknown>; required: string[] };
    const { version: _version, ...widgetFields } = (publicOpenapiDocument.components.schemas.Widget as { properties: Record<string, unknown> }).properties;
    edit(dir, 'spec/ws-protocol/modules/overlays.json', (s) =>
      asyncapi(s, (doc) => {
        doc.components.schemas = { OverlayCopy: { type: 'object', required: overlay.required, properties: overlay.properties } };
        doc.components.messages.overlaySettingsUpdate.payload.properties.data = { $ref: '#/components/schemas/OverlayCopy' };
        doc.components.messages.widgetSettingsUpdate.payload.properties.data = { type: 'object', properties: widgetFields };
      }),
    );
    // A derivation that omits a field the resource does not have, overrides without a reason, and adds one it has.
    edit(dir, 'spec/ws-protocol/modules/ideas.json', (s) =>
      asyncapi(s, (doc) => {
        const derived = doc.components.schemas.Idea['x-derived-from'];
        derived.omit.priority = 'Ideas have no priority on the board, so frames carry none.';
        derived.override.my_vote.reason = 'short';
        derived.add = { title: { reason: 'A frame names the idea it is about.', schema: { type: 'string' } } };
      }),
    );
    // A reference to the resource that is not the published OpenAPI document.
    edit(dir, 'spec/ws-protocol/modules/notifications.json', (s) =>
      asyncapi(s, (doc) => {
        doc.components.messages.notificationCreated.payload.properties.data = { $ref: '../../openapi/modules/notifications.yaml#/components/schemas/Notification' };
      }),
    );
    const result = await check(dir);
    expect(result.code).toBe(1);
    expect(result.output).toContain(
      'spec/ws-protocol/modules/overlays.json: components.schemas.OverlayCopy: a copy of OpenAPI Overlay (spec/openapi/modules/overlays.yaml); replace it with { "$ref": "../../published/openapi.json#/components/schemas/Overlay" }',
    );
    expect(result.output).toContain(
      'spec/ws-protocol/modules/overlays.json: components.messages.widgetSettingsUpdate.payload.properties.data: a copy of OpenAPI Widget (spec/openapi/modules/overlays.yaml) that drifted from it (lacks version)',
    );
    expect(result.output).toContain('spec/ws-protocol/modules/ideas.json: components.schemas.Idea.x-derived-from.omit.priority: OpenAPI Idea (spec/openapi/modules/ideas/board.yaml) has no field priority; remove it from omit');
    expect(result.output).toContain('spec/ws-protocol/modules/ideas.json: components.schemas.Idea.x-derived-from.override.my_vote: needs a reason (at least 12 characters)');
    expect(result.output).toContain('spec/ws-protocol/modules/ideas.json: components.schemas.Idea.x-derived-from.add.title: OpenAPI Idea (spec/openapi/modules/ideas/board.yaml) has title already');
    expect(result.output).toContain(
      'spec/ws-protocol/modules/notifications.json: $ref ../../openapi/modules/notifications.yaml#/components/schemas/Notification: a frame names a REST resource as ../../published/openapi.json#/components/schemas/<Name>',
    );
  });

  test('a derivation that still names a field its REST resource lost fails with the file and field to edit', async () => {
    const dir = fresh();
    // The idea frames are derived from the REST Idea; their override names my_vote.
    edit(dir, 'spec/openapi/modules/ideas/board.yaml', (t) => t.replace('vote_score, comment_count, my_vote, created_at', 'vote_score, comment_count, created_at').replace(/\n {8}my_vote: \{[^\n]*\}(?=\n)/, ''));
    const result = await check(dir);
    expect(result.code).toBe(1);
    expect(result.output).toContain('spec/ws-protocol/modules/ideas.json: components.schemas.Idea.x-derived-from.override.my_vote: OpenAPI Idea (spec/openapi/modules/ideas/board.yaml) has no field my_vote; remove it from override');
  });

  test('fails when a relayed channel has no complete relay entry', async () => {
    const dir = fresh();
    edit(dir, 'spec/ws-protocol/modules/chat.json', (s) => asyncapi(s, (doc) => delete doc.channels.chat['x-relay'].envelope));
    edit(dir, 'spec/ws-protocol/modules/overlays.json', (s) => asyncapi(s, (doc) => delete doc.channels.overlay['x-relay'].event_type_default));
    // The events channel's discriminant: every message declares its own required kind.
    edit(dir, 'spec/ws-protocol/modules/events.json', (s) =>
      asyncapi(s, (doc) => {
        doc.components.messages.eventsBroadcast.payload.required = doc.components.messages.eventsBroadcast.payload.required.filter((m: string) => m !== 'kind');
        doc.components.messages.eventsNotice.payload.properties.kind.const = 'event';
      }),
    );
    edit(dir, 'spec/ws-protocol/modules/music.json', (s) =>
      asyncapi(s, (doc) => {
        doc.channels.music['x-relay'] = { bus: 'music:{id}', envelope: 'pong', form: 'legacy' };
        doc.channels.music.messages.pong = { $ref: '#/components/messages/pong' };
      }),
    );
    const result = await check(dir);
    expect(result.code).toBe(1);
    expect(result.output).toContain('ws channel chat:{account_id}: relay needs envelope (the type of server messages of the channel)');
    expect(result.output).toContain('ws channel overlay:{key}: a lifted relay needs event_type_default');
    expect(result.output).toContain("ws channel events:{account_id}: message eventsNotice repeats kind event; every message of the family needs its own");
    expect(result.output).toContain("ws channel events:{account_id}: message eventsBroadcast must declare kind as a required const (the relay's discriminant)");
    expect(result.output).toContain('ws channel music_platform:{account_id}: relay bus music:{id} must carry the placeholders of music_platform:{account_id}');
    expect(result.output).toContain('ws channel music_platform:{account_id}: relay envelope pong lacks data for the legacy form');
  });
});
