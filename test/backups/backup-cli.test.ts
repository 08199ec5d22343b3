import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ConfigTree } from '../../src/config/config-tree.js';
import { cliEnv, runCli } from '../cli/cli-process.js';
import { ADMIN_PASSWORD, provisionStorage, startPlatform } from '../helpers/test-platform.js';

describe('platform backup: the CLI on the configured storage, without a running server', () => {
  let cwd: string;
  let storage: { tree: ConfigTree; cleanup: () => Promise<void> };
  let env: NodeJS.ProcessEnv;
  beforeAll(async () => {
    cwd = mkdtempSync(join(tmpdir(), 'platform-backup-cli-'));
    storage = await provisionStorage();
    env = cliEnv(storage.tree, { PLATFORM_ADMIN_PASSWORD: ADMIN_PASSWORD });
  });
  afterAll(async () => {
    await storage.cleanup();
    rmSync(cwd, { recursive: true, force: true });
  });

  it('creates, lists and restores a backup', async () => {
    const created = await runCli(
      ['backup', 'create', '--include', 'database,config', '--name', 'from the cli'],
      {
        cwd,
        env,
      },
    );
    expect(created.stderr).toBe('');
    expect(created.code).toBe(0);
    const id = /^(bkp_[0-9a-z]+)\s+\1\.tar\.gz\s/.exec(created.stdout)?.[1];
    expect(id, created.stdout).toBeDefined();

    const listed = await runCli(['backup', 'list'], { cwd, env });
    expect(listed.code).toBe(0);
    expect(listed.stdout).toMatch(
      new RegExp(`^${id}\\s.*manual\\s+completed.*configuration,database\\s+from the cli$`, 'm'),
    );

    // A change after the backup, made through a platform that is stopped again before the restore.
    const t = await startPlatform({}, { storage: storage.tree });
    await t.createUser('made-after-backup');
    await t.platform.close();

    const restored = await runCli(['backup', 'restore', id!, '--confirm', '--no-safety-backup'], {
      cwd,
      env,
    });
    expect(restored.stderr).toBe('');
    expect(restored.code).toBe(0);
    expect(restored.stdout).toMatch(
      /^restore rst_[0-9a-z]+ of bkp_[0-9a-z]+ started \(configuration, database\)$/m,
    );
    expect(restored.stdout).toMatch(/completed$/m);

    const after = await startPlatform({}, { storage: storage.tree });
    try {
      const users = await after.platform.context.database.db.selectFrom('users').select('username').execute();
      expect(users.map((u) => u.username)).toEqual(['admin']);
      const audit = await after.platform.context.database.db
        .selectFrom('audit_log')
        .select(['action', 'admin_user'])
        .where('resource_id', '=', id!)
        .execute();
      expect(audit).toContainEqual({ action: 'backup.restore', admin_user: 'cli' });
    } finally {
      await after.platform.close();
    }
    // Each CLI run compiles the platform from source (tsx) before it works.
  }, 90_000);

  it('explains a missing --confirm, unknown components and an unknown backup', async () => {
    const refused = await runCli(['backup', 'restore', 'bkp_any'], { cwd, env });
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('--confirm');
    const bad = await runCli(['backup', 'create', '--include', 'everything'], { cwd, env });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('unknown component(s): everything');
    const missing = await runCli(['backup', 'restore', 'bkp_missing', '--confirm'], { cwd, env });
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain("RESOURCE_NOT_FOUND: backup 'bkp_missing' does not exist");
  }, 60_000);
});
