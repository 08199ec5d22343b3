import { createServer } from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import { startPlatform } from '../helpers/test-platform.js';
import { Receiver } from '../webhooks/receiver.js';
import { until } from '../webhooks/webhook-fixtures.js';

/** A port on 127.0.0.1 that nothing listens on (taken, then let go). */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

async function startExporting(endpoint: string) {
  const lines: string[] = [];
  const t = await startPlatform(
    { tracing: { otlp_endpoint: endpoint, export_interval_ms: 100 }, logging: { level: 'warn' } },
    { logStream: { write: (line: string) => void lines.push(line) } },
  );
  const admin = await t.adminToken();
  const emit = async () => {
    const res = await t.request('POST', '/api/v1/events', {
      token: admin,
      body: { event_type: 'traced.failing', data: {} },
    });
    expect(res.statusCode, res.body).toBe(201);
  };
  const failures = async () => {
    const res = await t.request('GET', '/metrics', { token: admin });
    const m = /^platform_tracing_export_failures_total (\d+)$/m.exec(res.body);
    return m ? Number(m[1]) : undefined;
  };
  const component = async () => {
    const res = await t.request('GET', '/api/v1/components/health', { token: admin });
    return res.data.data.components.find((c: { name: string }) => c.name === 'tracing');
  };
  const warnings = () =>
    lines.map((l) => JSON.parse(l)).filter((l) => l.msg === 'could not export spans to the OTLP endpoint');
  return { t, admin, emit, failures, component, warnings };
}

describe('failed OTLP exports are reported', { timeout: 90_000 }, () => {
  const open: { close(): Promise<unknown> }[] = [];
  afterAll(async () => {
    for (const o of open) await o.close();
  });

  it('for an endpoint that refuses connections: a counter, one warning naming it, the tracing component warning', async () => {
    const port = await closedPort();
    const s = await startExporting(`http://collector:s3cret@127.0.0.1:${port}/v1/traces?token=abc`);
    open.push(s.t);
    await s.emit();
    await until(async () => ((await s.failures()) ?? 0) >= 1, 'a counted export failure', 30_000);
    await s.emit();
    await until(async () => ((await s.failures()) ?? 0) >= 2, 'a second failure', 30_000);
    const warned = s.warnings();
    expect(warned).toHaveLength(1); // rate-limited: one a minute
    expect(warned[0]).toMatchObject({
      level: 40,
      endpoint: `http://127.0.0.1:${port}/v1/traces`,
      error: expect.stringMatching(/ECONNREFUSED|connect/i),
    });
    expect(JSON.stringify(warned)).not.toMatch(/s3cret|token=abc/);
    await until(async () => (await s.component()).status === 'warning', 'the component warning', 10_000);
    const component = await s.component();
    expect(component).toMatchObject({ status: 'warning' });
    expect(component.checks[0]).toMatchObject({ name: 'otlp_export', status: 'warning' });
  });

  it('for an endpoint that answers 500, and healthy again once it accepts', async () => {
    const collector = new Receiver();
    await collector.start();
    open.push(collector);
    collector.respond = () => ({ status: 500 });
    const s = await startExporting(collector.url);
    open.unshift(s.t);
    await s.emit();
    await until(async () => ((await s.failures()) ?? 0) >= 1, 'a counted export failure', 30_000);
    expect(s.warnings()[0]).toMatchObject({ endpoint: `${collector.url}/v1/traces` });
    // The registry keeps a component's health for a second: the warning shows within it.
    await until(async () => (await s.component()).status === 'warning', 'the component warning', 10_000);
    collector.respond = () => ({});
    await s.emit();
    await until(
      async () => (await s.component()).status === 'healthy',
      'the component healthy again',
      30_000,
    );
  });
});
