import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPlatform, type TestPlatform } from '../helpers/test-platform.js';

interface Finding {
  check: string;
  component: string;
  severity: string;
  title: string;
  affected_resources: string[];
}

async function finished(t: TestPlatform, token: string, scanId: string) {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const res = await t.request('GET', `/api/v1/security/scan/${scanId}`, { token });
    const scan = res.data.data.scan;
    if (!['started', 'running'].includes(scan.status) || Date.now() > deadline) return scan;
    await new Promise((r) => setTimeout(r, 25));
  }
}

describe('security scans', () => {
  let t: TestPlatform;
  let admin: string;
  beforeAll(async () => {
    t = await startPlatform({
      auth: { jwt_secret: 'changeme'.repeat(4) },
      rate_limits: { enabled: false },
    });
    admin = await t.adminToken();
  }, 60_000);
  afterAll(async () => {
    await t.close();
  }, 60_000);

  const start = (body: Record<string, unknown>) =>
    t.request('POST', '/api/v1/security/scan', { token: admin, body });

  it('starts a scan with 202 and finds real problems in configuration and accounts', async () => {
    await t.request('POST', '/api/v1/admin/users', {
      token: admin,
      body: {
        username: 'dormant-admin',
        email: 'dormant@example.test',
        password: 'long-enough-1',
        roles: ['admin'],
      },
    });
    const owner = await t.createUser('key-holder');
    await t.request('POST', '/api/v1/auth/api-keys', { token: owner.access, body: { name: 'forgotten' } });

    const res = await start({
      type: 'full',
      components: ['plugins', 'configuration', 'permissions'],
      severity_threshold: 'low',
    });
    expect(res.statusCode).toBe(202);
    expect(res.data.data).toMatchObject({
      status: 'started',
      components_to_scan: ['configuration', 'permissions', 'plugins'],
      severity_threshold: 'low',
      // No scan has been measured yet: an integer estimated from the rows the components read, and said so.
      estimate_basis: 'component_counts',
    });
    expect(Number.isInteger(res.data.data.estimated_duration_ms)).toBe(true);
    const scanId = res.data.data.scan_id as string;
    expect(scanId).toMatch(/^scn_/);

    const scan = await finished(t, admin, scanId);
    expect(scan.status).toBe('completed');
    expect(scan.duration_ms).toBeGreaterThanOrEqual(0);
    const findings = scan.findings as Finding[];
    const titled = (part: string) => findings.find((f) => f.title.includes(part));
    expect(titled('Weak JWT signing secret')).toMatchObject({
      severity: 'critical',
      component: 'configuration',
      affected_resources: ['config:auth.jwt_secret'],
    });
    expect(titled('Webhooks may target private addresses')?.severity).toBe('high');
    expect(titled('Rate limiting is off')?.severity).toBe('medium');
    expect(titled('Event encryption key')?.affected_resources).toEqual(['config:events.encryption_key']);
    expect(titled('Backups cannot be encrypted')).toBeTruthy();
    expect(titled("Administrator 'dormant-admin' has never logged in")?.severity).toBe('medium');
    expect(titled('The first administrator still has its initial password')).toMatchObject({
      severity: 'high',
      affected_resources: ['user:admin'],
    });
    expect(titled("API key 'forgotten' of 'key-holder' has never been used")?.severity).toBe('low');
    expect(findings.find((f) => f.title.includes("'admin' has never logged in"))).toBeUndefined();

    const plugins = scan.checks.find((c: { component: string }) => c.component === 'plugins');
    expect(['skipped', 'passed', 'failed']).toContain(plugins.status);
    if (plugins.status === 'skipped') expect(plugins.reason).toMatch(/plugin/);
    expect(scan.summary.total_findings).toBe(findings.length);
    expect(scan.summary.by_severity.critical).toBeGreaterThanOrEqual(1);

    const status = (await t.request('GET', '/api/v1/security/status', { token: admin })).data.data;
    expect(status).toMatchObject({ last_scan: scan.completed_at, last_scan_id: scanId, status: 'critical' });

    const again = await start({});
    expect(again.data.data.estimated_duration_ms).toBe(scan.duration_ms);
    expect(again.data.data.estimate_basis).toBe('recent_scans');
    expect(again.data.data.components_to_scan).toEqual(['configuration', 'permissions', 'plugins']);
    await finished(t, admin, again.data.data.scan_id);
  });

  it('leaves findings below severity_threshold out of the result and counts them', async () => {
    const res = await start({ components: ['configuration', 'permissions'], severity_threshold: 'high' });
    const scan = await finished(t, admin, res.data.data.scan_id);
    expect(scan.findings.length).toBeGreaterThan(0);
    expect(scan.findings.every((f: Finding) => ['high', 'critical'].includes(f.severity))).toBe(true);
    expect(scan.summary.below_threshold).toBeGreaterThan(0);
    expect(scan.components_to_scan).toEqual(['configuration', 'permissions']);
  });

  it('runs as a security_scan task, audited', async () => {
    const res = await start({ type: 'quick' });
    expect(res.data.data.components_to_scan).toEqual(['configuration']);
    const scanId = res.data.data.scan_id as string;
    await finished(t, admin, scanId);
    // The task ends just after the scan row: its runner records the handler's return.
    const deadline = Date.now() + 5000;
    let task = await t.request('GET', `/api/v1/tasks/${scanId}`, { token: admin });
    while (task.data.data?.status === 'running' && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 25));
      task = await t.request('GET', `/api/v1/tasks/${scanId}`, { token: admin });
    }
    expect(task.statusCode).toBe(200);
    expect(task.data.data).toMatchObject({ id: scanId, type: 'security_scan', status: 'completed' });
    const audit = await t.request(
      'GET',
      `/api/v1/admin/audit-log?action=security.scan&resource_id=${scanId}`,
      {
        token: admin,
      },
    );
    expect(audit.data.data.audit_entries).toHaveLength(1);
  });

  it('finds installed plugins with wildcard permissions or from an uploaded file', async () => {
    // An installed plugin as the plugin manager stores it (src/plugins/plugin-tables.ts).
    const now = new Date().toISOString();
    await sql`insert into plugins (id, version, manifest, source, source_ref, sha256, enabled, status, config, installed_at, updated_at)
      values ('greedy-plugin', '1.0.0', ${JSON.stringify({ name: 'greedy-plugin', permissions: ['events:emit', 'auth:*'] })},
        'file', 'greedy-plugin-1.0.0.tgz', 'abc', 1, 'active', '{}', ${now}, ${now})`.execute(
      t.platform.context.database.db,
    );
    const res = await start({ components: ['plugins'] });
    const scan = await finished(t, admin, res.data.data.scan_id);
    expect(scan.checks[0]).toMatchObject({ name: 'installed_plugins', status: 'failed', findings: 2 });
    expect(scan.findings).toEqual([
      expect.objectContaining({ severity: 'high', affected_resources: ['plugin:greedy-plugin'] }),
      expect.objectContaining({
        severity: 'medium',
        title: "Plugin 'greedy-plugin' comes from an uploaded file",
      }),
    ]);
  });

  it('validates the request and answers 404 for an unknown scan', async () => {
    expect((await start({ components: ['network'] })).statusCode).toBe(422);
    expect((await start({ severity_threshold: 'extreme' })).statusCode).toBe(422);
    expect((await start({ type: 'full', extra: true })).statusCode).toBe(422);
    const missing = await t.request('GET', '/api/v1/security/scan/scn_nope', { token: admin });
    expect(missing.statusCode).toBe(404);
    expect(missing.data.error.code).toBe('RESOURCE_NOT_FOUND');
    const u = await t.createUser('scan-peeker');
    expect((await t.request('POST', '/api/v1/security/scan', { token: u.access, body: {} })).statusCode).toBe(
      403,
    );
  });
});

describe('security scans on a hardened configuration', () => {
  let t: TestPlatform;
  beforeAll(async () => {
    t = await startPlatform({
      auth: { jwt_secret: 'k9VxQ2mB7rT4wZ8pL1sN6dF3hJ0cY5gA' },
      events: { encryption_key: 'wq3Zb8T1nKx6Yp2Rv9Lm4Hc7Fs0Dj5Ga1Ue8Ni3Ko6Q=' },
      backups: { encryption_key: 'a-long-backup-passphrase-4821' },
      webhooks: { allow_private_targets: false },
    });
  }, 60_000);
  afterAll(async () => {
    await t.close();
  }, 60_000);

  it('finds nothing in the configuration', async () => {
    const token = await t.adminToken();
    const res = await t.request('POST', '/api/v1/security/scan', {
      token,
      body: { components: ['configuration'] },
    });
    const scan = await finished(t, token, res.data.data.scan_id);
    expect(scan.status).toBe('completed');
    expect(scan.findings).toEqual([]);
    expect(scan.checks.every((c: { status: string }) => c.status === 'passed')).toBe(true);
  });
});

describe("a security scan's estimated duration", () => {
  let t: TestPlatform;
  let admin: string;
  beforeAll(async () => {
    t = await startPlatform();
    admin = await t.adminToken();
  }, 60_000);
  afterAll(async () => {
    await t.close();
  }, 60_000);

  interface MeasuredScan {
    status: string;
    duration_ms: number;
    checks: { name: string; component: string; duration_ms: number }[];
  }
  const start = (body: Record<string, unknown>) =>
    t.request('POST', '/api/v1/security/scan', { token: admin, body });

  it('estimates fewer components from the measured durations of their own checks', async () => {
    const first = await start({});
    expect(first.statusCode).toBe(202);
    expect(first.data.data.estimate_basis).toBe('component_counts');
    expect(Number.isInteger(first.data.data.estimated_duration_ms)).toBe(true);
    const a: MeasuredScan = await finished(t, admin, first.data.data.scan_id);
    const b: MeasuredScan = await finished(t, admin, (await start({})).data.data.scan_id);
    expect([a.status, b.status]).toEqual(['completed', 'completed']);

    const quick = await start({ type: 'quick' });
    expect(quick.data.data.estimate_basis).toBe('recent_scans');
    const mean = (xs: number[]) => xs.reduce((x, y) => x + y, 0) / xs.length;
    const bookkeeping = mean(
      [b, a].map((s) => s.duration_ms - s.checks.reduce((x, c) => x + c.duration_ms, 0)),
    );
    const configuration = a.checks.filter((c) => c.component === 'configuration');
    const expected = configuration.reduce(
      (sum, c) => sum + mean([b, a].map((s) => s.checks.find((x) => x.name === c.name)!.duration_ms)),
      bookkeeping,
    );
    expect(quick.data.data.estimated_duration_ms).toBe(Math.max(0, Math.round(expected)));
    await finished(t, admin, quick.data.data.scan_id);
  });
});
