import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPlatform, type TestPlatform } from '../helpers/test-platform.js';
import { tempRepository, writePlugin } from './plugin-fixtures.js';

// An uninstall deletes the plugin's rows in one transaction, then its logs, cache and files: a process that dies
// in between leaves those behind for a plugin no longer installed. Installing it again must start clean.
describe('installing a plugin whose earlier uninstall was interrupted', () => {
  let t: TestPlatform;
  let token: string;

  beforeAll(async () => {
    const repo = tempRepository();
    writePlugin(repo, { name: 'reborn' }, 'export default { setup() {} };');
    t = await startPlatform({ plugins: { repositories: [repo] } });
    token = await t.adminToken();
  });
  afterAll(async () => t?.close());

  it('starts without the data folder and logs the uninstalled installation left', async () => {
    const dataDir = resolve(t.platform.context.cfg().storage.data_dir, 'plugin-data', 'reborn');
    // What the interrupted uninstall left: the row is gone, the data folder and a log line are not.
    mkdirSync(dataDir, { recursive: true });
    writeFileSync(join(dataDir, 'old-install.jsonl'), '{"secret":"of the uninstalled installation"}\n');
    await t.platform.context.database.db
      .insertInto('plugin_logs' as never)
      .values({
        id: 'plg_log_left',
        plugin_id: 'reborn',
        timestamp: new Date().toISOString(),
        level: 'info',
        message: 'written by the uninstalled installation',
      } as never)
      .execute();

    const res = await t.request('POST', '/api/v1/admin/plugins/install', {
      token,
      body: { source: 'repository', plugin_name: 'reborn', config: {} },
    });
    expect(res.statusCode, res.body).toBe(201);
    expect(existsSync(join(dataDir, 'old-install.jsonl'))).toBe(false);
    const detail = await t.request('GET', '/api/v1/admin/plugins/reborn', { token });
    expect(detail.statusCode).toBe(200);
    expect(JSON.stringify(detail.data.data)).not.toContain('written by the uninstalled installation');
  });
});
