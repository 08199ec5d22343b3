import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type LoadOptions, loadBootConfig } from '../../src/config/load-config.js';
import { AppError } from '../../src/http/app-error.js';

/** The problems of a CONFIG_VALIDATION_ERROR thrown by `loadBootConfig`. */
function problemsOf(options: LoadOptions): { field: string; reason: string }[] {
  try {
    loadBootConfig(options);
  } catch (err) {
    expect(err).toBeInstanceOf(AppError);
    expect((err as AppError).code).toBe('CONFIG_VALIDATION_ERROR');
    return (err as AppError).details?.['errors'] as { field: string; reason: string }[];
  }
  throw new Error('expected a CONFIG_VALIDATION_ERROR');
}

describe('loadBootConfig', () => {
  let cwd: string;
  beforeEach(() => {
    cwd = mkdtempSync(join(tmpdir(), 'platform-load-config-'));
  });
  afterEach(() => {
    rmSync(cwd, { recursive: true, force: true });
  });

  it('gives every default when there is no file and no environment', () => {
    const boot = loadBootConfig({ env: {}, cwd });
    expect(boot.configFile).toBeUndefined();
    expect(boot.adminPassword).toBeUndefined();
    expect(boot.config.server).toMatchObject({ host: '127.0.0.1', port: 8080, trusted_proxies: [] });
    expect(boot.config.storage.data_dir).toBe('./data');
    expect(boot.config.database.url).toBe('');
    expect(boot.config.redis.url).toBe('');
    expect(boot.config.rate_limits).toMatchObject({
      enabled: true,
      authenticated: { max: 1000, window_seconds: 3600 },
      anonymous: { max: 100, window_seconds: 3600 },
      auth: { max: 10, window_seconds: 600 },
    });
    expect(boot.config.webhooks.allow_private_targets).toBe(false);
    expect(boot.config.events.max_payload_bytes).toBe(262_144);
  });

  it('reads platform.config.yaml from the working folder', () => {
    writeFileSync(
      join(cwd, 'platform.config.yaml'),
      'server:\n  port: 9001\n  trusted_proxies: [10.0.0.1]\n',
    );
    const boot = loadBootConfig({ env: {}, cwd });
    expect(boot.configFile).toBe(join(cwd, 'platform.config.yaml'));
    expect(boot.config.server.port).toBe(9001);
    expect(boot.config.server.trusted_proxies).toEqual(['10.0.0.1']);
    expect(boot.config.server.host).toBe('127.0.0.1');
  });

  it('reads platform.config.json from the working folder', () => {
    writeFileSync(
      join(cwd, 'platform.config.json'),
      JSON.stringify({ rate_limits: { anonymous: { max: 5 } } }),
    );
    const boot = loadBootConfig({ env: {}, cwd });
    expect(boot.configFile).toBe(join(cwd, 'platform.config.json'));
    expect(boot.config.rate_limits.anonymous).toEqual({ max: 5, window_seconds: 3600 });
  });

  it('prefers the YAML file when several default names exist', () => {
    writeFileSync(join(cwd, 'platform.config.json'), JSON.stringify({ server: { port: 1 } }));
    writeFileSync(join(cwd, 'platform.config.yml'), 'server:\n  port: 2\n');
    expect(loadBootConfig({ env: {}, cwd }).config.server.port).toBe(2);
  });

  it('takes an explicit --config path, relative to the working folder, over the default names', () => {
    mkdirSync(join(cwd, 'etc'));
    writeFileSync(join(cwd, 'platform.config.yaml'), 'server:\n  port: 1111\n');
    writeFileSync(join(cwd, 'etc', 'custom.yaml'), 'server:\n  port: 2222\n');
    const boot = loadBootConfig({ env: {}, cwd, configFile: 'etc/custom.yaml' });
    expect(boot.configFile).toBe(join(cwd, 'etc', 'custom.yaml'));
    expect(boot.config.server.port).toBe(2222);
  });

  it('takes the config path from PLATFORM_CONFIG, and --config over it', () => {
    writeFileSync(join(cwd, 'a.json'), JSON.stringify({ server: { port: 3001 } }));
    writeFileSync(join(cwd, 'b.json'), JSON.stringify({ server: { port: 3002 } }));
    expect(loadBootConfig({ env: { PLATFORM_CONFIG: 'a.json' }, cwd }).config.server.port).toBe(3001);
    expect(
      loadBootConfig({ env: { PLATFORM_CONFIG: 'a.json' }, cwd, configFile: 'b.json' }).config.server.port,
    ).toBe(3002);
  });

  it('reports a missing explicit config file', () => {
    const problems = problemsOf({ env: {}, cwd, configFile: 'missing.yaml' });
    expect(problems).toHaveLength(1);
    expect(problems[0]?.field).toBe('(file)');
    expect(problems[0]?.reason).toContain('missing.yaml');
  });

  it('lets the environment win over the file, key by key', () => {
    writeFileSync(join(cwd, 'platform.config.yaml'), 'server:\n  port: 9001\n  host: 0.0.0.0\n');
    const boot = loadBootConfig({ env: { PLATFORM__SERVER__PORT: '9002' }, cwd });
    expect(boot.config.server.port).toBe(9002);
    expect(boot.config.server.host).toBe('0.0.0.0');
  });

  it('types environment values by the schema: integers, booleans, strings and arrays', () => {
    const boot = loadBootConfig({
      cwd,
      env: {
        PLATFORM__RATE_LIMITS__AUTH__MAX: '25',
        PLATFORM__RATE_LIMITS__ENABLED: 'false',
        PLATFORM__WEBHOOKS__ALLOW_PRIVATE_TARGETS: 'TRUE',
        PLATFORM__METRICS__PUBLIC_PROMETHEUS: '1',
        PLATFORM__SERVER__TRUSTED_PROXIES: '10.0.0.1, 10.0.0.2',
        PLATFORM__PLUGINS__REPOSITORIES: '["./a","https://example.test/index.json"]',
        PLATFORM__LOGGING__LEVEL: 'debug',
        PLATFORM__MAIL__FROM: 'Ops <ops@example.test>',
        PLATFORM_ADMIN_PASSWORD: 'first-admin-password',
      },
    });
    expect(boot.config.rate_limits.auth.max).toBe(25);
    expect(boot.config.rate_limits.enabled).toBe(false);
    expect(boot.config.webhooks.allow_private_targets).toBe(true);
    expect(boot.config.metrics.public_prometheus).toBe(true);
    expect(boot.config.server.trusted_proxies).toEqual(['10.0.0.1', '10.0.0.2']);
    expect(boot.config.plugins.repositories).toEqual(['./a', 'https://example.test/index.json']);
    expect(boot.config.logging.level).toBe('debug');
    expect(boot.config.mail.from).toBe('Ops <ops@example.test>');
    expect(boot.adminPassword).toBe('first-admin-password');
  });

  it('ignores environment variables outside the PLATFORM__ prefix', () => {
    const boot = loadBootConfig({
      cwd,
      env: { SERVER__PORT: 'x', PLATFORM_SERVER_PORT: 'y', HOME: '/root' },
    });
    expect(boot.config.server.port).toBe(8080);
  });

  it('lists every problem of the environment and the file at once', () => {
    writeFileSync(
      join(cwd, 'platform.config.yaml'),
      'server:\n  host: ""\n  extra: 1\nlogging:\n  level: loud\nsurprise: {}\n',
    );
    const problems = problemsOf({
      cwd,
      env: {
        PLATFORM__SERVER__PORT: 'abc',
        PLATFORM__SERVER__PORTT: '1',
        PLATFORM__RATE_LIMITS__ENABLED: 'maybe',
        PLATFORM__EVENTS__RETENTION_DAYS: '1.5',
        PLATFORM__RATE_LIMITS__AUTH__MAX: '0',
      },
    });
    const byField = Object.fromEntries(problems.map((p) => [p.field, p.reason]));
    expect(Object.keys(byField).sort()).toEqual(
      [
        'events.retention_days',
        'logging.level',
        'rate_limits.auth.max',
        'rate_limits.enabled',
        'server.extra',
        'server.host',
        'server.port',
        'server.portt',
        'surprise',
      ].sort(),
    );
    expect(byField['server.port']).toContain('PLATFORM__SERVER__PORT');
    expect(byField['server.portt']).toContain('unknown key');
    expect(byField['server.extra']).toBe('unknown key');
    expect(byField['logging.level']).toBe('must be one of trace, debug, info, warn, error, silent');
  });

  it('refuses __proto__ and constructor keys in a file', () => {
    writeFileSync(
      join(cwd, 'platform.config.json'),
      '{"__proto__": {"polluted": true}, "server": {"constructor": {"prototype": {}}}}',
    );
    const problems = problemsOf({ env: {}, cwd });
    expect(problems.map((p) => p.field).sort()).toEqual(['__proto__', 'server.constructor']);
    expect(({} as Record<string, unknown>)['polluted']).toBeUndefined();
  });

  it('returns a deep-frozen result', () => {
    const boot = loadBootConfig({ env: {}, cwd });
    expect(Object.isFrozen(boot)).toBe(true);
    expect(Object.isFrozen(boot.config.rate_limits.authenticated)).toBe(true);
    expect(Object.isFrozen(boot.config.server.trusted_proxies)).toBe(true);
    expect(() => {
      (boot.config.server as { port: number }).port = 1;
    }).toThrow(TypeError);
    // a second load is not affected by the first result being frozen
    expect(loadBootConfig({ env: { PLATFORM__SERVER__PORT: '1' }, cwd }).config.server.port).toBe(1);
  });

  it('puts explicit overrides above the environment', () => {
    const boot = loadBootConfig({
      cwd,
      env: { PLATFORM__SERVER__PORT: '9002' },
      overrides: { server: { port: 0 } },
    });
    expect(boot.config.server.port).toBe(0);
  });

  it('reload() reads the same file and environment again', () => {
    const file = join(cwd, 'platform.config.yaml');
    writeFileSync(file, 'mail:\n  from: one@x.test\n');
    const boot = loadBootConfig({ env: { PLATFORM__SERVER__PORT: '9005' }, cwd });
    writeFileSync(file, 'mail:\n  from: two@x.test\n');
    const again = boot.reload();
    expect(again.config.mail.from).toBe('two@x.test');
    expect(again.config.server.port).toBe(9005);
    expect(boot.config.mail.from).toBe('one@x.test');
  });
});
