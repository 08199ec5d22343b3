import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPlatform, type TestPlatform } from '../helpers/test-platform.js';
import { tempRepository, writePlugin } from '../plugins/plugin-fixtures.js';
import { Receiver } from '../webhooks/receiver.js';
import { createSubscription, FAST_WEBHOOKS, getEvent, until } from '../webhooks/webhook-fixtures.js';

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-0[01]$/;

/** A plugin that answers each `chain.start` with an event of its own, emitted from the handler. */
const relay = (next: string) => `
export default {
  async setup(ctx) {
    await ctx.events.subscribe(['chain.start'], async (event) => {
      await ctx.events.emit('${next}', { cause: event.event_id });
    }, { name: 'relay' });
  },
};`;

describe("an event a plugin emits from its handler continues the handled event's trace", {
  timeout: 60_000,
}, () => {
  let t: TestPlatform;
  let admin: string;
  const receiver = new Receiver();

  beforeAll(async () => {
    const repo = tempRepository();
    for (const isolation of ['inline', 'worker'] as const) {
      writePlugin(
        repo,
        {
          name: `relay-${isolation}`,
          isolation,
          permissions: ['events:subscribe', 'events:emit'],
          events: { emits: [`chain.${isolation}`], subscribes: ['chain.start'] },
        },
        relay(`chain.${isolation}`),
      );
    }
    t = await startPlatform({ ...FAST_WEBHOOKS, plugins: { repositories: [repo] } });
    admin = await t.adminToken();
    for (const name of ['relay-inline', 'relay-worker']) {
      const res = await t.request('POST', '/api/v1/admin/plugins/install', {
        token: admin,
        body: { source: 'repository', plugin_name: name },
      });
      expect(res.statusCode, res.body).toBe(201);
    }
    await receiver.start();
    await createSubscription(t, admin, {
      name: 'chain',
      event_patterns: ['chain.*'],
      delivery_method: 'webhook',
      webhook_config: { url: `${receiver.url}/hook` },
    });
  });
  afterAll(async () => {
    await t?.close();
    await receiver.close();
  });

  it('stores and delivers the second event in the trace of the first, for inline and worker plugins', async () => {
    // No traceparent: the first event begins a trace, which the plugins' events must join.
    const res = await t.request('POST', '/api/v1/events', {
      token: admin,
      body: { event_type: 'chain.start', data: {} },
    });
    expect(res.statusCode, res.body).toBe(201);
    const first = res.data.data.event.event_id as string;
    const delivered = (type: string) => receiver.requests.find((r) => r.json?.event_type === type);
    await until(
      () => ['chain.start', 'chain.inline', 'chain.worker'].every((type) => delivered(type) !== undefined),
      'the deliveries of the three events',
    );
    const trace = (await getEvent(t, admin, first)).metadata.trace_id as string;
    expect(trace).toMatch(/^[0-9a-f]{32}$/);
    const spans = new Set<string>();
    for (const type of ['chain.start', 'chain.inline', 'chain.worker']) {
      const got = delivered(type)!;
      const [, traceId, spanId] = TRACEPARENT.exec(String(got.headers['traceparent'])) ?? [];
      expect(traceId, type).toBe(trace);
      spans.add(spanId!);
      const stored = await getEvent(t, admin, got.json.event_id as string);
      expect(stored.metadata.trace_id, type).toBe(trace);
      if (type !== 'chain.start') expect(got.json.data).toEqual({ cause: first });
    }
    expect(spans.size).toBe(3);
  });
});
