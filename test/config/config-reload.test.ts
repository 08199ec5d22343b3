import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PlatformEventMap } from '../../src/kernel/platform-events.js';
import { startPlatform, type TestPlatform } from '../helpers/test-platform.js';

describe('POST /api/v1/admin/config/reload', () => {
  let t: TestPlatform;
  let admin: string;
  let dir: string;
  let file: string;
  const announced: PlatformEventMap['platform.event'][] = [];

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'platform-config-'));
    file = join(dir, 'platform.config.yaml');
    writeFileSync(
      file,
      ['mail:', '  from: "First <first@x.test>"', 'events:', '  retention_days: 5', ''].join('\n'),
    );
    t = await startPlatform({}, { env: { PLATFORM_CONFIG: file } });
    admin = await t.adminToken();
    t.platform.context.events.on('platform.event', (e) => announced.push(e));
  });
  afterAll(async () => {
    await t.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const events = async () =>
    (await t.request('GET', '/api/v1/config?section=events', { token: admin })).data.data.events;
  const mail = async () =>
    (await t.request('GET', '/api/v1/config?section=mail', { token: admin })).data.data.mail;

  it('starts with the values of the config file', async () => {
    expect((await mail()).from).toBe('First <first@x.test>');
    expect((await events()).retention_days).toBe(5);
  });

  it('re-reads a changed file without a restart and keeps runtime changes on top', async () => {
    const put = await t.request('PUT', '/api/v1/config', {
      token: admin,
      body: { events: { retention_days: 9 } },
    });
    expect(put.statusCode).toBe(200);
    writeFileSync(
      file,
      [
        'mail:',
        '  from: "Second <second@x.test>"',
        'events:',
        '  retention_days: 7',
        'server:',
        '  shutdown_grace_seconds: 3',
        '',
      ].join('\n'),
    );
    announced.length = 0;
    const res = await t.request('POST', '/api/v1/admin/config/reload', { token: admin });
    expect(res.statusCode).toBe(200);
    expect(res.data.data.changed_keys.sort()).toEqual(['mail.from', 'server.shutdown_grace_seconds']);
    expect(res.data.data.restart_required).toBe(false);
    expect(Number(res.data.data.metadata.config_version)).toBe(Number(put.data.data.config_version) + 1);
    expect((await mail()).from).toBe('Second <second@x.test>');
    // the database change (9) stays above the file's new value (7)
    expect((await events()).retention_days).toBe(9);
    expect(announced.find((e) => e.type === 'system.config.updated')?.data).toMatchObject({
      updated_keys: expect.arrayContaining(['mail.from']),
    });
    const audit = await t.platform.context.database.db
      .selectFrom('audit_log')
      .select('action')
      .where('action', '=', 'config.reload')
      .execute();
    expect(audit).toHaveLength(1);

    // once the runtime change is removed, the file's value shows through
    await t.request('PUT', '/api/v1/config', { token: admin, body: { events: { retention_days: null } } });
    expect((await events()).retention_days).toBe(7);
  });

  it('reports nothing changed when the file is the same', async () => {
    const res = await t.request('POST', '/api/v1/admin/config/reload', { token: admin });
    expect(res.statusCode).toBe(200);
    expect(res.data.data.changed_keys).toEqual([]);
  });

  it('refuses an invalid file with every problem and keeps the configuration in effect', async () => {
    writeFileSync(
      file,
      ['mail:', '  from: 42', 'events:', '  retention_days: lots', '  nope: 1', ''].join('\n'),
    );
    const res = await t.request('POST', '/api/v1/admin/config/reload', { token: admin });
    expect(res.statusCode).toBe(400);
    expect(res.data.error.code).toBe('CONFIG_VALIDATION_ERROR');
    const fields = (res.data.error.details.errors as { field: string }[]).map((e) => e.field).sort();
    expect(fields).toEqual(['events.nope', 'events.retention_days', 'mail.from']);
    expect((await mail()).from).toBe('Second <second@x.test>');
  });

  it('refuses a file that is not YAML with a readable problem', async () => {
    writeFileSync(file, 'mail: [unclosed\n');
    const res = await t.request('POST', '/api/v1/admin/config/reload', { token: admin });
    expect(res.statusCode).toBe(400);
    expect(res.data.error.code).toBe('CONFIG_VALIDATION_ERROR');
    expect(res.data.error.details.errors[0].field).toBe('(file)');
  });
});
