import { afterAll, describe, expect, it } from 'vitest';
import { Cluster, type Instance } from './cluster-instances.js';

/**
 * ADR 0011: a process killed after an emit committed but before its answer was stored. The retry with the same
 * Idempotency-Key, on another instance, answers that event (Idempotent-Replayed) instead of emitting it again.
 * PLATFORM_TEST_EXIT_AFTER_EMIT_COMMIT=1 (test-only) makes the first instance SIGKILL itself at that point.
 */
describe('an emit whose process dies before its idempotent answer is stored', { timeout: 120_000 }, () => {
  let cluster: Cluster | undefined;
  afterAll(async () => {
    await cluster?.close();
  });

  it('is answered by the retry with the same key, and stored once', async () => {
    cluster = await Cluster.start(1, { PLATFORM_TEST_EXIT_AFTER_EMIT_COMMIT: '1' });
    const doomed = cluster.instances[0] as Instance;
    const body = { event_type: 'crash.window', source: 'producer', data: { n: 1 } };
    const headers = { 'idempotency-key': 'crash-window-1' };
    const first = await doomed
      .api('POST', '/api/v1/events', { token: await doomed.adminToken(), headers, body })
      .then(
        (r) => r.status,
        () => 'no answer',
      );
    expect(first).toBe('no answer');
    await new Promise((resolve) => doomed.process.child.once('exit', resolve));

    const other = await cluster.add({ PLATFORM_TEST_EXIT_AFTER_EMIT_COMMIT: '0' });
    const token = await other.adminToken();
    const retry = await other.api('POST', '/api/v1/events', { token, headers, body, timeoutMs: 20_000 });
    expect(retry.status, JSON.stringify(retry.data)).toBe(201);
    expect(retry.headers.get('idempotent-replayed')).toBe('true');
    const listed = await other.api('GET', '/api/v1/events?event_type=crash.window', { token });
    const ids = listed.data.data.events.map((e: { event_id: string }) => e.event_id);
    expect(ids).toEqual([retry.data.data.event.event_id]);
    const again = await other.api('POST', '/api/v1/events', { token, headers, body, timeoutMs: 20_000 });
    expect(again.status).toBe(201);
    expect(again.data.data.event.event_id).toBe(retry.data.data.event.event_id);
  });
});
