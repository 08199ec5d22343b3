import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPlatform, type TestPlatform } from '../helpers/test-platform.js';
import { tempRepository, writePlugin } from './plugin-fixtures.js';

describe('changing a plugin configuration: PATCH merges, PUT replaces, secrets are kept', () => {
  let t: TestPlatform;
  let token: string;
  const initial = {
    plain: 'x',
    token: 's3cret-value',
    retry: { max: 3, delay: 5 },
    hosts: ['a', 'b'],
  };

  /** What the plugin itself was configured with (the API shows secrets masked). */
  const seen = async () => (await t.request('GET', '/api/v1/ext/configured/config', { token })).data.data;
  const reset = async () => {
    const res = await t.request('PUT', '/api/v1/plugins/configured', { token, body: { config: initial } });
    expect(res.statusCode, res.body).toBe(200);
  };

  beforeAll(async () => {
    const repo = tempRepository();
    writePlugin(
      repo,
      {
        name: 'configured',
        permissions: ['http:routes'],
        config_schema: {
          type: 'object',
          additionalProperties: false,
          properties: {
            plain: { type: 'string', default: 'default-plain' },
            token: { type: 'string', secret: true, default: '' },
            retry: {
              type: 'object',
              properties: { max: { type: 'integer', default: 1 }, delay: { type: 'integer', default: 1 } },
            },
            hosts: { type: 'array', items: { type: 'string' }, default: [] },
          },
        },
      },
      `export default { setup(ctx) { ctx.routes.get('/config', () => ctx.config); } };`,
    );
    t = await startPlatform({ plugins: { repositories: [repo] } });
    token = await t.adminToken();
    const res = await t.request('POST', '/api/v1/plugins', {
      token,
      body: { name: 'configured', version: '1.0.0', config: initial },
    });
    expect(res.statusCode, res.body).toBe(201);
  });
  afterAll(async () => t?.close());

  it('PATCH merges the keys sent and keeps a stored secret it did not send', async () => {
    await reset();
    const res = await t.request('PATCH', '/api/v1/plugins/configured', {
      token,
      body: { config: { plain: 'y' } },
    });
    expect(res.statusCode, res.body).toBe(200);
    expect(await seen()).toEqual({ ...initial, plain: 'y' });
    const detail = (await t.request('GET', '/api/v1/plugins/configured', { token })).data.data.plugin;
    expect(detail.configuration).toMatchObject({ plain: 'y', token: '********' });
  });

  it('PATCH merges nested objects key by key, replaces arrays, and null brings back a default', async () => {
    await reset();
    const res = await t.request('PATCH', '/api/v1/plugins/configured', {
      token,
      body: { config: { retry: { max: 5 }, hosts: ['c'], plain: null } },
    });
    expect(res.statusCode, res.body).toBe(200);
    expect(await seen()).toEqual({
      plain: 'default-plain',
      token: 's3cret-value',
      retry: { max: 5, delay: 5 },
      hosts: ['c'],
    });
  });

  it('PATCH validates the merged configuration and changes nothing when it is invalid', async () => {
    await reset();
    const res = await t.request('PATCH', '/api/v1/plugins/configured', {
      token,
      body: { config: { retry: { max: 'many' } } },
    });
    expect(res.statusCode).toBe(422);
    expect(res.data.error.details.field).toBe('config.retry.max');
    expect(await seen()).toEqual(initial);
  });

  it('PUT replaces the configuration whole, keeping a secret sent back as the mask', async () => {
    await reset();
    const masked = await t.request('PUT', '/api/v1/plugins/configured', {
      token,
      body: { config: { plain: 'z', token: '********' } },
    });
    expect(masked.statusCode, masked.body).toBe(200);
    expect(await seen()).toEqual({ plain: 'z', token: 's3cret-value', hosts: [] });
    const replaced = await t.request('PUT', '/api/v1/plugins/configured', {
      token,
      body: { config: { plain: 'w' } },
    });
    expect(replaced.statusCode).toBe(200);
    expect(await seen()).toEqual({ plain: 'w', token: '', hosts: [] });
  });
});
