import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ConfigTree } from '../../src/config/config-tree.js';
import { ADMIN_PASSWORD, provisionStorage, startPlatform } from '../helpers/test-platform.js';
import { cliEnv, runCli } from './cli-process.js';

// Each test spawns the CLI (a cold start of node + tsx + the platform): on a busy machine that takes a while.
describe('platform admin reset-password', { timeout: 90_000 }, () => {
  let cwd: string;
  let storage: { tree: ConfigTree; cleanup: () => Promise<void> };
  beforeAll(async () => {
    cwd = mkdtempSync(join(tmpdir(), 'platform-reset-'));
    storage = await provisionStorage();
  });
  afterAll(async () => {
    await storage.cleanup();
    rmSync(cwd, { recursive: true, force: true });
  });

  it('sets the new password, ends the old sessions and records an audit entry', async () => {
    const a = await startPlatform({}, { storage: storage.tree });
    let old: { access: string };
    try {
      old = await a.login('admin', ADMIN_PASSWORD);
      expect((await a.request('GET', '/api/v1/auth/me', { token: old.access })).statusCode).toBe(200);
      const res = await runCli(['admin', 'reset-password', 'admin', '--password', 'reset-by-cli-1'], {
        cwd,
        env: cliEnv(storage.tree),
      });
      expect(res.stderr).toBe('');
      expect(res.code).toBe(0);
      expect(res.stdout).toBe('password of admin changed; 1 session(s) ended\n');
      if (a.backend === 'cluster') {
        // running instances hear of the revocation over Redis at once
        const me = await a.request('GET', '/api/v1/auth/me', { token: old.access });
        expect(me.statusCode).toBe(401);
        expect(me.data.error.details.reason).toBe('session_revoked');
      }
    } finally {
      await a.close();
    }
    const b = await startPlatform({}, { storage: storage.tree });
    try {
      const me = await b.request('GET', '/api/v1/auth/me', { token: old.access });
      expect(me.statusCode).toBe(401);
      expect(me.data.error.details.reason).toBe('session_revoked');
      const refused = await b.request('POST', '/api/v1/auth/login', {
        body: { username: 'admin', password: ADMIN_PASSWORD },
      });
      expect(refused.statusCode).toBe(401);
      const login = await b.request('POST', '/api/v1/auth/login', {
        body: { username: 'admin', password: 'reset-by-cli-1' },
      });
      expect(login.statusCode).toBe(200);
      expect(login.data.data.password_change_required).toBe(false);
      const audit = await b.platform.context.database.db
        .selectFrom('audit_log')
        .selectAll()
        .where('action', '=', 'user.reset_password')
        .execute();
      expect(audit).toHaveLength(1);
      expect(audit[0]).toMatchObject({ admin_user: 'cli', resource_type: 'user' });
    } finally {
      await b.close();
    }
  });

  it('generates a password when none is given, which must be changed at the next login', async () => {
    const res = await runCli(['admin', 'reset-password', 'admin'], { cwd, env: cliEnv(storage.tree) });
    expect(res.code).toBe(0);
    const generated = /new password for admin: (\S+)/.exec(res.stdout)?.[1];
    expect(generated).toBeDefined();
    const t = await startPlatform({}, { storage: storage.tree });
    try {
      const login = await t.request('POST', '/api/v1/auth/login', {
        body: { username: 'admin', password: generated },
      });
      expect(login.statusCode).toBe(200);
      expect(login.data.data.password_change_required).toBe(true);
    } finally {
      await t.close();
    }
  });

  it('refuses an unknown user (exit 1) and a too short password (exit 2)', async () => {
    const env = cliEnv(storage.tree);
    const unknown = await runCli(['admin', 'reset-password', 'nobody', '--password', 'long-enough-1'], {
      cwd,
      env,
    });
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toBe("no user 'nobody'\n");
    const short = await runCli(['admin', 'reset-password', 'admin', '--password', 'short'], { cwd, env });
    expect(short.code).toBe(2);
    expect(short.stderr).toContain('at least 10 characters');
    const usage = await runCli(['admin', 'reset-password'], { cwd, env });
    expect(usage.code).toBe(2);
  });
});
