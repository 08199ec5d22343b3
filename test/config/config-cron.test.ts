import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadBootConfig } from '../../src/config/load-config.js';
import { provisionStorage, startPlatform, type TestPlatform } from '../helpers/test-platform.js';

const jobNames = async (t: TestPlatform, token: string) => {
  const res = await t.request('GET', '/api/v1/services/scheduler', { token });
  return (res.data.data.config.jobs as { name: string; cron: string }[]).map((j) => `${j.name} ${j.cron}`);
};

describe('cron settings are read with the scheduler’s parser', { timeout: 60_000 }, () => {
  let storage: Awaited<ReturnType<typeof provisionStorage>>;
  let t: TestPlatform;
  let admin: string;

  beforeAll(async () => {
    storage = await provisionStorage();
    t = await startPlatform({}, { storage: storage.tree });
    admin = await t.adminToken();
  }, 60_000);
  afterAll(async () => {
    await t?.platform.close();
    await storage?.cleanup();
  }, 60_000);

  it('refuses invalid cron expressions with 400 CONFIG_VALIDATION_ERROR naming every key, changing nothing', async () => {
    const before = (await t.request('GET', '/api/v1/admin/config', { token: admin })).data.data;
    const res = await t.request('PUT', '/api/v1/config', {
      token: admin,
      body: {
        events: { retention_schedule: 'not a cron' },
        tasks: { cleanup_schedule: 'garbage' },
        backups: { schedule: 'bad cron' },
        logging: { retention_days: 20 },
      },
    });
    expect(res.statusCode, res.body).toBe(400);
    expect(res.data.error.code).toBe('CONFIG_VALIDATION_ERROR');
    const fields = res.data.error.details.errors.map((e: { field: string }) => e.field).sort();
    expect(fields).toEqual(['backups.schedule', 'events.retention_schedule', 'tasks.cleanup_schedule']);
    expect(res.data.error.details.errors[0].reason).toMatch(/not a valid cron expression/);

    const after = (await t.request('GET', '/api/v1/admin/config', { token: admin })).data.data;
    expect(after.metadata.config_version).toBe(before.metadata.config_version);
    expect(after.config.events.retention_schedule).toBe('41 3 * * *');
    expect(after.config.tasks.cleanup_schedule).toBe('17 3 * * *');
    expect(after.config.logging.retention_days).toBe(before.config.logging.retention_days);
  });

  it('refuses an expression that never occurs, also through PATCH and dotted keys', async () => {
    const res = await t.request('PATCH', '/api/v1/config', {
      token: admin,
      body: { 'backups.schedule': '0 0 30 2 *' },
    });
    expect(res.statusCode).toBe(400);
    expect(res.data.error.details).toMatchObject({ field: 'backups.schedule' });
  });

  it('accepts valid expressions, and an empty backups.schedule', async () => {
    const res = await t.request('PUT', '/api/v1/config', {
      token: admin,
      body: { tasks: { cleanup_schedule: '5 4 * * *' }, backups: { schedule: '' } },
    });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.data.data.updated_keys).toEqual(['tasks.cleanup_schedule']);
  });

  it('keeps the jobs scheduled after a restart, even over a bad value an older version stored', async () => {
    // What an older version accepted and stored: the scheduler could never run it.
    await t.platform.context.database.db
      .insertInto('config_overrides')
      .values({
        key: 'events.retention_schedule',
        value: JSON.stringify('not a cron'),
        updated_at: new Date().toISOString(),
        updated_by: 'admin',
      })
      .execute();
    await t.platform.close();
    t = await startPlatform({}, { storage: storage.tree });
    admin = await t.adminToken();
    const jobs = await jobNames(t, admin);
    expect(jobs).toContain('database_cleanup 5 4 * * *');
    expect(jobs).toContain('event_retention 41 3 * * *');
    const service = (await t.request('GET', '/api/v1/services/scheduler', { token: admin })).data.data;
    expect(service.health).toBe('healthy');
    expect(service.config.unscheduled_jobs).toEqual([]);
  });

  it('stops the start with the config loader’s error when the file or the environment holds a bad expression', () => {
    const dir = mkdtempSync(join(tmpdir(), 'cron-config-'));
    writeFileSync(
      join(dir, 'platform.config.json'),
      JSON.stringify({ events: { retention_schedule: 'x y' } }),
    );
    let failed: { code?: string; details?: { errors?: { field: string }[] } } | undefined;
    try {
      loadBootConfig({ cwd: dir, env: { PLATFORM__TASKS__CLEANUP_SCHEDULE: 'garbage' } });
    } catch (err) {
      failed = err as typeof failed;
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    expect(failed?.code).toBe('CONFIG_VALIDATION_ERROR');
    expect(failed?.details?.errors?.map((e) => e.field).sort()).toEqual([
      'events.retention_schedule',
      'tasks.cleanup_schedule',
    ]);
  });
});
