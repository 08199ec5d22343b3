import { afterEach, describe, expect, it } from 'vitest';
import { startPlatform, type TestPlatform } from '../helpers/test-platform.js';

// How SQLite commits reach the disk, as the database connection itself reports it. SQLite only: the cluster
// project leaves this file out (vitest.config.ts).
describe('SQLite durability setting', { timeout: 20_000 }, () => {
  let t: TestPlatform | undefined;
  afterEach(async () => {
    await t?.close();
    t = undefined;
  });

  const reported = async (platform: TestPlatform) => {
    const admin = await platform.adminToken();
    const service = await platform.request('GET', '/api/v1/services/database', { token: admin });
    const config = await platform.request('GET', '/api/v1/config', { token: admin });
    return {
      synchronous: service.data.data.config.synchronous,
      configured: config.data.data.database.sqlite_synchronous,
    };
  };

  it('syncs every commit to disk by default, so an answered write survives a power loss', async () => {
    t = await startPlatform();
    expect(await reported(t)).toEqual({ synchronous: 'full', configured: 'full' });
    const emit = await t.request('POST', '/api/v1/events', {
      token: await t.adminToken(),
      body: { event_type: 'durability.check', data: {} },
    });
    expect(emit.statusCode).toBe(201);
  });

  it('syncs at checkpoints only when an operator chooses normal', async () => {
    t = await startPlatform({ database: { sqlite_synchronous: 'normal' } });
    expect(await reported(t)).toEqual({ synchronous: 'normal', configured: 'normal' });
  });
});
