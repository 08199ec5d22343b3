import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LogStoreService } from '../../src/logs/log-store-service.js';
import { startPlatform, type TestPlatform } from '../helpers/test-platform.js';

const logsOf = (t: TestPlatform) => t.platform.context.registry.get('log_store') as LogStoreService;

describe('system logs search', () => {
  let t: TestPlatform;
  let admin: string;
  beforeAll(async () => {
    t = await startPlatform();
    admin = await t.adminToken();
    t.platform.context.app.log
      .child({ component: 'search-test' })
      .info('Überweisung an ÄRGER GmbH gescheitert');
    await logsOf(t).flush();
  });
  afterAll(async () => {
    await t.close();
  });

  const total = async (search: string) => {
    const res = await t.request(
      'GET',
      `/api/v1/admin/system/logs?component=search-test&search=${encodeURIComponent(search)}`,
      { token: admin },
    );
    expect(res.statusCode).toBe(200);
    return res.data.data.pagination.total as number;
  };

  it('matches non-ASCII letters whatever their case, as it does ASCII ones', async () => {
    expect(await total('gmbh')).toBe(1);
    expect(await total('ÄRGER')).toBe(1);
    expect(await total('ärger')).toBe(1);
    expect(await total('überweisung')).toBe(1);
    expect(await total('ÜBERWEISUNG')).toBe(1);
    expect(await total('Überweisung an ärger')).toBe(1);
    expect(await total('ärgerlich')).toBe(0);
  });
});
