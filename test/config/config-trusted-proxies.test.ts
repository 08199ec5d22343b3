import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPlatform, type TestPlatform } from '../helpers/test-platform.js';

/**
 * server.trusted_proxies is read on every request, so a change applies without a restart and says so; an
 * entry that is no address or range was stored and then silently ignored by the trust test.
 */
describe('server.trusted_proxies at runtime', () => {
  let t: TestPlatform;
  let admin: string;
  beforeAll(async () => {
    t = await startPlatform();
    admin = await t.adminToken();
  });
  afterAll(async () => {
    await t.close();
  });

  it('refuses an entry that is neither an IP address nor a CIDR range, and changes nothing', async () => {
    const before = (await t.request('GET', '/api/v1/admin/config', { token: admin })).data.data.metadata;
    const res = await t.request('PUT', '/api/v1/config', {
      token: admin,
      body: { server: { trusted_proxies: ['10.0.0.1', 'proxy.internal', '10.0.0.0/33'] } },
    });
    expect(res.statusCode).toBe(400);
    expect(res.data.error.code).toBe('CONFIG_VALIDATION_ERROR');
    expect(res.data.error.details.errors).toEqual([
      { field: 'server.trusted_proxies.1', reason: 'must be an IP address or a CIDR range' },
      { field: 'server.trusted_proxies.2', reason: 'must be an IP address or a CIDR range' },
    ]);
    const after = await t.request('GET', '/api/v1/admin/config', { token: admin });
    expect(after.data.data.config.server.trusted_proxies).toEqual([]);
    expect(after.data.data.metadata.config_version).toBe(before.config_version);
  });

  it('applies a change at once, without reporting a restart as required', async () => {
    const res = await t.request('PATCH', '/api/v1/config', {
      token: admin,
      body: { 'server.trusted_proxies': ['127.0.0.1'] },
    });
    expect(res.statusCode).toBe(200);
    expect(res.data.data).toMatchObject({
      updated_keys: ['server.trusted_proxies'],
      restart_required: false,
    });
    // The forwarded address is believed now: blocking it refuses the request that names it.
    const block = await t.request('POST', '/api/v1/admin/security/block-ip', {
      token: admin,
      body: { ip_address: '198.51.100.7', reason: 'trusted proxy probe', duration_hours: 1 },
    });
    expect(block.statusCode).toBe(201);
    const forwarded = await t.request('GET', '/api/v1/tasks', {
      token: admin,
      headers: { 'x-forwarded-for': '198.51.100.7' },
    });
    expect(forwarded.statusCode).toBe(403);
    expect(forwarded.data.error.details.reason).toBe('ip_blocked');
  });
});
