/**
 * codegen against doctored copies of spec/: REST/GraphQL twins must carry the same fields both
 * ways, in type and nullability (scripts/codegen/field-parity.ts), a stored resource's fields must
 * be columns of its table (scripts/codegen/storage.ts), and every declared exception must excuse a
 * real difference. Each message names the file to edit.
 */
import { rmSync } from 'node:fs';
import { codegen, edit, scratchCopy } from '../helpers/codegen-scratch';


const check = (dir: string) => codegen(dir);

const OPENAPI = 'spec/openapi/modules/overlays.yaml';
const GRAPHQL = 'spec/graphql/modules/overlays.graphql';
/** The REST Overlay schema's first lines, where a doctored property or declaration goes. */
const REST_OVERLAY = '    Overlay:\n      x-table: overlays\n';
const REST_OVERLAY_NAME = `${REST_OVERLAY}      type: object\n      additionalProperties: false\n      required: [id, account_id, name, settings, version, created_at, updated_at]\n      properties:\n        id: { type: string, format: uuid }\n        account_id: { type: string, format: uuid }\n        name: { type: string }\n`;
const restDescription = (text: string) => text.replace(REST_OVERLAY_NAME, `${REST_OVERLAY_NAME}        description: { type: string, maxLength: 500, nullable: true }\n`);
const graphqlDescription = (text: string) => text.replace('type Overlay {\n  id: UUID!\n  accountId: UUID!\n  name: String!\n', 'type Overlay {\n  id: UUID!\n  accountId: UUID!\n  name: String!\n  description: String\n');

jest.setTimeout(300_000);

describe('codegen: REST/GraphQL field parity and spec/storage', () => {
  const dirs: string[] = [];
  const fresh = () => {
    const dir = scratchCopy('codegen-parity-');
    dirs.push(dir);
    return dir;
  };
  afterAll(() => dirs.forEach((dir) => rmSync(dir, { recursive: true, force: true })));

  test('fails when a REST field is missing in GraphQL, a GraphQL field or input field in REST, or their types differ', async () => {
    const dir = fresh();
    edit(dir, OPENAPI, restDescription);
    edit(dir, GRAPHQL, (s) =>
      s
        .replace('  "What the browser source renders (goal_bar, chat_box, ...)."\n  type: String!\n', '  "What the browser source renders (goal_bar, chat_box, ...)."\n  type: String!\n  pinned: Boolean!\n')
        .replace('input CreateOverlayInput {\n', 'input CreateOverlayInput {\n  description: String\n')
        .replace('  "Starts at 1, one higher with every update; send it back with the next update."\n  version: Int!\n  createdAt: String!\n  updatedAt: String!\n}\n\n"A widget', '  "Starts at 1, one higher with every update; send it back with the next update."\n  version: String\n  createdAt: String!\n  updatedAt: String!\n}\n\n"A widget'),
    );
    const result = await check(dir);
    expect(result.code).toBe(1);
    expect(result.output).toContain(
      `${GRAPHQL}: type Overlay lacks field description (REST Overlay.description in ${OPENAPI}); add it or declare x-graphql-omit on Overlay`,
    );
    expect(result.output).toContain(`${OPENAPI}: Widget lacks property pinned (GraphQL Widget.pinned in ${GRAPHQL}); add it or declare x-graphql-only on Widget`);
    expect(result.output).toContain(
      `${OPENAPI}: createOverlay lacks body property description (GraphQL CreateOverlayInput.description in ${GRAPHQL}); add it or declare x-graphql-only on the createOverlay request body schema`,
    );
    expect(result.output).toContain(`${GRAPHQL}: Overlay.version is nullable in GraphQL (String) but always present in REST (REST Overlay.version in ${OPENAPI})`);
    expect(result.output).toContain(`${GRAPHQL}: Overlay.version has type String in GraphQL but an integer in REST (REST Overlay.version in ${OPENAPI})`);
  });

  test('fails when an operation names a GraphQL twin its module does not define, naming the file to add it to', async () => {
    const dir = fresh();
    edit(dir, OPENAPI, (s) => s.replace('      x-graphql: Mutation.createOverlay\n', '      x-graphql: Mutation.makeOverlay\n'));
    const result = await check(dir);
    expect(result.code).toBe(1);
    expect(result.output).toContain(
      `${OPENAPI}: createOverlay declares x-graphql Mutation.makeOverlay, which ${GRAPHQL} does not define; add \`makeOverlay\` to its \`extend type Mutation\` with the operation's @gate, or remove x-graphql`,
    );
  });

  test('fails when a stored field has no column, x-table names no table, or an exception excuses nothing', async () => {
    const dir = fresh();
    edit(dir, OPENAPI, (s) => restDescription(s).replace('    Widget:\n      x-table: widgets\n', '    Widget:\n      x-table: widget\n      x-graphql-omit: { colour: "not offered on GraphQL yet" }\n'));
    edit(dir, GRAPHQL, graphqlDescription);
    const result = await check(dir);
    expect(result.code).toBe(1);
    expect(result.output).not.toContain('lacks field description');
    expect(result.output).toContain(
      `${OPENAPI}: Overlay.description is stored in table overlays (x-table) but generated/tables.ts has no column overlays.description; write a migration in src/modules/overlays/migrations.ts adding overlays.description (text (varchar(500)), nullable), or declare x-column / x-computed on Overlay`,
    );
    expect(result.output).toContain(
      `${GRAPHQL}: Overlay.description is always present in GraphQL (String, null when empty) but may be left out in REST; list it in the REST schema's required (REST Overlay.description in ${OPENAPI})`,
    );
    expect(result.output).toContain(`${OPENAPI}: Widget x-table widget is no table of generated/tables.ts`);
    expect(result.output).toContain(`${OPENAPI}: Widget: x-graphql-omit colour excuses no difference between the twins; remove it`);
  });

  test('a declared exception lets a difference pass, and a stored field may be declared computed', async () => {
    const dir = fresh();
    edit(dir, OPENAPI, (s) =>
      restDescription(s).replace(
        REST_OVERLAY,
        `${REST_OVERLAY}      x-graphql-omit: { description: 'a REST-only note while the GraphQL twin is being written' }\n      x-computed: { description: 'kept in the overlay settings while its column is being written' }\n`,
      ),
    );
    const result = await check(dir);
    expect(result.output).not.toContain('problem(s)');
    expect(result.output).toContain('differs from what spec/ produces');
    expect(result.code).toBe(1);
  });
});
