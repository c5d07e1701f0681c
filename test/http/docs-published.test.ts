/**
 * One published document: the service serves exactly the files codegen writes
 * under spec/published/, byte for byte, and that OpenAPI document carries a security requirement
 * on every operation, derived from its gate, over declared security schemes.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { routes } from '../../generated/rest';
import { useTestApp } from '../helpers/app';

const published = (file: string) => readFileSync(path.resolve(__dirname, '../../spec/published', file), 'utf8');
const METHODS = ['get', 'post', 'put', 'patch', 'delete'] as const;
type Operation = { operationId: string; security?: Record<string, string[]>[] };

describe('the published documents', () => {
  const t = useTestApp();

  test.each(['/v1/openapi.json', '/v1/api-doc/openapi.json'])('GET %s is spec/published/openapi.json, byte for byte', async (url) => {
    const res = await fetch(`${t.url}${url}`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    expect(await res.text()).toBe(published('openapi.json'));
  });

  test('GET /v1/schema is spec/published/schema.graphql, byte for byte', async () => {
    const res = await fetch(`${t.url}/v1/schema`);
    expect(res.status).toBe(200);
    expect(await res.text()).toBe(published('schema.graphql'));
  });

  test('every published operation has a security requirement from its gate, over declared schemes', () => {
    const doc = JSON.parse(published('openapi.json')) as { paths: Record<string, Partial<Record<string, Operation>>>; components: { securitySchemes: Record<string, unknown> } };
    const gates = new Map<string, (typeof routes)[number]['gate']>(routes.map((r) => [r.operationId, r.gate]));
    const schemes = Object.keys(doc.components.securitySchemes);
    expect(schemes).toEqual(expect.arrayContaining(['userJwt', 'userApiKey', 'serviceKey', 'systemKey', 'developerKey', 'tokenQuery', 'popoutCookie']));
    let checked = 0;
    for (const item of Object.values(doc.paths)) {
      for (const method of METHODS) {
        const op = item[method];
        if (!op) continue;
        checked += 1;
        const gate = gates.get(op.operationId)!;
        const names = (op.security ?? []).flatMap((alternative) => Object.keys(alternative));
        for (const name of names) expect(schemes).toContain(name);
        if (gate.auth === 'public') expect({ id: op.operationId, security: op.security }).toEqual({ id: op.operationId, security: [] });
        else expect({ id: op.operationId, empty: names.length === 0 }).toEqual({ id: op.operationId, empty: false });
        if (gate.auth === 'system-key') expect(names).toEqual(['systemKey']);
        if (gate.auth === 'first-party' || gate.auth === 'user') expect(names.sort()).toEqual(['userApiKey', 'userJwt']);
        if (gate.permissions) expect(names).not.toContain('overlayToken');
      }
    }
    expect(checked).toBeGreaterThan(200);
  });
});
