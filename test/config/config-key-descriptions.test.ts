import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { leafKeys } from '../../src/config/config-schema.js';
import { startPlatform, type TestPlatform } from '../helpers/test-platform.js';

interface Node {
  description?: string;
  properties?: Record<string, Node>;
  'x-restart'?: boolean;
}

describe('the configuration schema in the OpenAPI document', () => {
  let t: TestPlatform;
  beforeAll(async () => {
    t = await startPlatform();
  });
  afterAll(async () => {
    await t.close();
  });

  it('gives every key its meaning and says which keys apply only after a restart', async () => {
    const res = await t.request('GET', '/openapi.json');
    expect(res.statusCode).toBe(200);
    const config: Node =
      res.data.paths['/api/v1/admin/config'].get.responses['200'].content['application/json'].schema
        .properties.data.properties.config;
    const keys = new Map<string, Node>();
    const walk = (node: Node, path: string[]) => {
      if (node.properties) for (const [k, v] of Object.entries(node.properties)) walk(v, [...path, k]);
      else keys.set(path.join('.'), node);
    };
    walk(config, []);
    const expected = leafKeys();
    expect([...keys.keys()].sort()).toEqual(expected.map((k) => k.path).sort());
    const undescribed = [...keys]
      .filter(([, n]) => !n.description || n.description.length < 10)
      .map(([k]) => k);
    expect(undescribed).toEqual([]);
    for (const k of expected) expect(keys.get(k.path)?.['x-restart'] === true, k.path).toBe(k.restart);
    expect(keys.get('server.port')).toMatchObject({
      'x-restart': true,
      description: expect.stringContaining('Port'),
    });
    expect(keys.get('server.environment')?.['x-restart']).toBeUndefined();
  });
});
