import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Validator } from '@seriousme/openapi-schema-validator';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ConfigTree } from '../../src/config/config-tree.js';
import { provisionStorage } from '../helpers/test-platform.js';
import { cliEnv, runCli } from './cli-process.js';

// Each test spawns the CLI (a cold start of node + tsx + the platform): on a busy machine that takes a while.
describe('platform CLI: migrate, openapi, help and bad input', { timeout: 90_000 }, () => {
  let cwd: string;
  let storage: { tree: ConfigTree; cleanup: () => Promise<void> };
  beforeAll(async () => {
    cwd = mkdtempSync(join(tmpdir(), 'platform-cli-'));
    storage = await provisionStorage();
  });
  afterAll(async () => {
    await storage.cleanup();
    rmSync(cwd, { recursive: true, force: true });
  });

  it('migrate applies every migration on a fresh database, then says it is up to date', async () => {
    const env = cliEnv(storage.tree);
    const first = await runCli(['migrate'], { cwd, env });
    expect(first.stderr).toBe('');
    expect(first.code).toBe(0);
    expect(first.stdout).toMatch(/^applied \d+ migrations?: 0001-core/);
    const second = await runCli(['migrate'], { cwd, env });
    expect(second.code).toBe(0);
    expect(second.stdout).toBe('database is up to date\n');
  });

  it('migrate with --config reads that file', async () => {
    const dataDir = join(cwd, 'from-config-file');
    const file = join(cwd, 'custom.json');
    writeFileSync(file, JSON.stringify({ storage: { data_dir: dataDir } }));
    // the embedded form of the check: the SQLite file appears where the config file says
    const env = cliEnv({}, {});
    const res = await runCli(['migrate', '--config', 'custom.json'], { cwd, env });
    expect(res.code).toBe(0);
    expect(res.stdout).toMatch(/^applied/);
    expect(existsSync(join(dataDir, 'platform.db'))).toBe(true);
  });

  it('exits 1 on a bad configuration and lists every problem', async () => {
    const env = cliEnv(storage.tree, {
      PLATFORM__SERVER__PORT: 'abc',
      PLATFORM__RATE_LIMITS__ENABLED: 'maybe',
      PLATFORM__NOT__A_KEY: '1',
    });
    const res = await runCli(['serve'], { cwd, env });
    expect(res.code).toBe(1);
    expect(res.stderr).toContain('configuration is not valid');
    expect(res.stderr).toContain("server.port: cannot read 'abc' as integer (from PLATFORM__SERVER__PORT)");
    expect(res.stderr).toContain('rate_limits.enabled');
    expect(res.stderr).toContain('not.a_key: unknown key');
    expect(res.stdout).not.toContain('listening on');
  });

  it('openapi prints a valid OpenAPI 3.1 document without touching the configured storage', async () => {
    const dataDir = join(cwd, 'openapi-data');
    const env = cliEnv({}, { PLATFORM__STORAGE__DATA_DIR: dataDir });
    const res = await runCli(['openapi'], { cwd, env });
    expect(res.code).toBe(0);
    const doc = JSON.parse(res.stdout) as { openapi: string; paths: Record<string, unknown> };
    expect(doc.openapi).toBe('3.1.0');
    expect(Object.keys(doc.paths)).toContain('/api/v1/config');
    const result = await new Validator().validate(doc as never);
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
    expect(existsSync(dataDir)).toBe(false);
  });

  it('prints the usage with --help, and refuses an unknown command or option with exit code 2', async () => {
    const env = cliEnv(storage.tree);
    const help = await runCli(['--help'], { cwd, env });
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('Usage: platform <command>');
    const unknown = await runCli(['frobnicate'], { cwd, env });
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain("unknown command 'frobnicate'");
    const option = await runCli(['migrate', '--nope'], { cwd, env });
    expect(option.code).toBe(2);
    expect(option.stderr).toContain('--nope');
  });
});
