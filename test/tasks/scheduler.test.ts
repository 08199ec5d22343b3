import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '../helpers/eventually.js';
import { provisionStorage, startPlatform, type TestPlatform } from '../helpers/test-platform.js';

describe('scheduler', { timeout: 30_000 }, () => {
  let storage: Awaited<ReturnType<typeof provisionStorage>>;
  let a: TestPlatform;
  let b: TestPlatform | undefined;

  beforeAll(async () => {
    storage = await provisionStorage();
    a = await startPlatform({}, { storage: storage.tree });
    // Cluster mode: a second instance on the same PostgreSQL and Redis competes for every occurrence.
    // Embedded mode is one process by definition, so it runs alone there.
    if (a.backend === 'cluster') b = await startPlatform({}, { storage: storage.tree });
  }, 60_000);
  afterAll(async () => {
    await b?.platform.close();
    await a?.platform.close();
    await storage?.cleanup();
  }, 60_000);

  it('schedules database_cleanup daily', async () => {
    const res = await a.request('GET', '/api/v1/services/scheduler', { token: await a.adminToken() });
    expect(res.statusCode).toBe(200);
    expect(res.data.data.config.jobs).toContainEqual({
      name: 'database_cleanup',
      cron: '17 3 * * *',
      description: expect.any(String),
    });
    const job = a.platform.context.scheduler.list().find((j) => j.name === 'database_cleanup')!;
    const next = new Date(job.next_run!);
    expect(next.getUTCHours()).toBe(3);
    expect(next.getUTCMinutes()).toBe(17);
    expect(next.getTime() - Date.now()).toBeLessThanOrEqual(86_400_000);
  });

  it('runs each occurrence of a job on exactly one instance and reports real figures', async () => {
    const runs: { occurrence: string; instance: string }[] = [];
    const instances = b ? [a, b] : [a];
    instances.forEach((t, i) => {
      t.platform.context.scheduler.schedule('test_tick', '* * * * * *', ({ occurrence }) => {
        runs.push({ occurrence: occurrence.toISOString(), instance: `i${i}` });
      });
    });
    expect(await eventually(async () => new Set(runs.map((r) => r.occurrence)).size >= 3, 6_000)).toBe(true);
    const stats = instances.map(
      (t) => t.platform.context.scheduler.list().find((j) => j.name === 'test_tick')!,
    );
    for (const t of instances) t.platform.context.scheduler.unschedule('test_tick');

    // Each instance's own count of runs is exactly what it ran.
    stats.forEach((job, i) => {
      expect(job.runs).toBe(runs.filter((r) => r.instance === `i${i}`).length);
      expect(job.failures).toBe(0);
    });
    if (b) {
      // Both instances fired every occurrence; the one that did not take the lock counted it as skipped.
      const skipped = stats.reduce((n, j) => n + j.skipped, 0);
      expect(skipped).toBeGreaterThanOrEqual(runs.length - 1);
    }

    const occurrences = runs.map((r) => r.occurrence);
    expect(new Set(occurrences).size).toBe(occurrences.length);
    for (const o of occurrences) expect(o).toMatch(/\.000Z$/);
    const sorted = [...occurrences].sort();
    for (let i = 1; i < sorted.length; i++) {
      expect(Date.parse(sorted[i]!) - Date.parse(sorted[i - 1]!)).toBe(1000);
    }
  });

  it('counts a failing job, shows it in the service health and its recent errors', async () => {
    const { scheduler } = a.platform.context;
    let calls = 0;
    scheduler.schedule('test_failing', '* * * * * *', () => {
      calls += 1;
      throw new Error('job exploded');
    });
    try {
      const token = await a.adminToken();
      const read = async () => (await a.request('GET', '/api/v1/services/scheduler', { token })).data.data;
      // Health checks answer for up to a second (docs/operations.md): the warning shows within one.
      expect(
        await eventually(async () => {
          const s = await read();
          return s.metrics.failures >= 1 && s.health === 'warning';
        }, 6_000),
      ).toBe(true);
      const service = await read();
      expect(service.health).toBe('warning');
      expect(service.metrics.failures).toBeGreaterThanOrEqual(1);
      expect(service.metrics.runs).toBeGreaterThanOrEqual(service.metrics.failures);
      expect(service.metrics.requests_handled).toBe(service.metrics.runs);
      expect(service.metrics.error_rate).toBeGreaterThan(0);
      expect(service.recent_errors[0]).toMatchObject({ error: 'job test_failing: job exploded' });
      expect(calls).toBeGreaterThanOrEqual(1);
      const job = scheduler.list().find((j) => j.name === 'test_failing')!;
      expect(job).toMatchObject({ last_status: 'failed', last_error: 'job exploded' });
    } finally {
      scheduler.unschedule('test_failing');
    }
  });

  it('reports warning while a job could not be scheduled, until it is scheduled or removed', async () => {
    const { scheduler } = a.platform.context;
    const token = await a.adminToken();
    const read = async () => (await a.request('GET', '/api/v1/services/scheduler', { token })).data.data;
    expect(() => scheduler.schedule('test_unschedulable', 'not a cron', () => {})).toThrow(/invalid cron/);
    try {
      expect(await eventually(async () => (await read()).health === 'warning', 6_000)).toBe(true);
      const service = await read();
      expect(service.metrics.unscheduled_jobs).toBe(1);
      expect(service.config.unscheduled_jobs).toEqual([
        { name: 'test_unschedulable', cron: 'not a cron', error: expect.stringMatching(/invalid cron/) },
      ]);
      const health = await a.platform.context.scheduler.health();
      expect(health.checks).toContainEqual(expect.objectContaining({ name: 'schedules', status: 'fail' }));
    } finally {
      scheduler.unschedule('test_unschedulable');
    }
    expect(await eventually(async () => (await read()).health === 'healthy', 6_000)).toBe(true);
  });

  it('refuses an invalid cron expression and a name already in use', () => {
    const { scheduler } = a.platform.context;
    expect(() => scheduler.schedule('bad', 'every tuesday', () => {})).toThrow(/invalid cron expression/);
    expect(() => scheduler.schedule('database_cleanup', '* * * * *', () => {})).toThrow(/already scheduled/);
  });
});
