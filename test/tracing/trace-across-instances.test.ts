import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPlatform, type TestPlatform } from '../helpers/test-platform.js';
import { RawSse, until as untilStream } from '../streams/stream-clients.js';
import { Receiver } from '../webhooks/receiver.js';
import { createSubscription, FAST_WEBHOOKS, getEvent, until } from '../webhooks/webhook-fixtures.js';

const TRACE = '0af7651916cd43dd8448eb211c80319c';
const CALLER = `00-${TRACE}-b7ad6b7169203331-01`;

interface Span {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  attributes: { key: string; value: Record<string, unknown> }[];
}

const spansOf = (otlp: Receiver, eventId: string): Span[] =>
  otlp
    .at('/v1/traces')
    .flatMap((r) =>
      (r.json?.resourceSpans ?? []).flatMap((rs: { scopeSpans: { spans: Span[] }[] }) =>
        rs.scopeSpans.flatMap((ss) => ss.spans),
      ),
    )
    .filter((s: Span) =>
      s.attributes.some((a) => a.key === 'platform.event.id' && a.value['stringValue'] === eventId),
    );

/**
 * Two instances on one PostgreSQL and Redis (cluster project); on the embedded project the second "instance" is
 * the first. The trace goes with the event through the store and Redis, so whichever instance delivers it, the
 * spans of both join one trace.
 */
describe('trace context across instances', { timeout: 60_000 }, () => {
  let a: TestPlatform;
  let b: TestPlatform;
  let admin: string;
  const otlp = new Receiver();
  const receiver = new Receiver();
  const open: { close(): void }[] = [];

  beforeAll(async () => {
    await otlp.start();
    await receiver.start();
    const tracing = { otlp_endpoint: otlp.url, export_interval_ms: 100 };
    a = await startPlatform({ ...FAST_WEBHOOKS, tracing });
    b =
      a.backend === 'cluster'
        ? await startPlatform({ ...FAST_WEBHOOKS, tracing }, { storage: a.storage })
        : a;
    admin = await a.adminToken();
    await createSubscription(a, admin, {
      name: 'across',
      event_patterns: ['across.*'],
      delivery_method: 'webhook',
      webhook_config: { url: `${receiver.url}/hook` },
    });
  });
  afterAll(async () => {
    for (const c of open) c.close();
    if (b !== a) await b?.platform.close();
    await a?.close();
    await receiver.close();
    await otlp.close();
  });

  it("carries the emitter's trace to the other instance's streams and to every delivery, in one exported trace", async () => {
    const baseB = await b.platform.listen();
    const sse = new RawSse(`${baseB}/api/v1/events/stream?patterns=across.*`, {
      authorization: `Bearer ${await b.adminToken()}`,
    });
    open.push(sse);
    await sse.ready;
    const ids: string[] = [];
    for (let i = 0; i < 6; i++) {
      const res = await a.request('POST', '/api/v1/events', {
        token: admin,
        headers: { traceparent: CALLER },
        body: { event_type: 'across.sent', data: { i } },
      });
      expect(res.statusCode, res.body).toBe(201);
      ids.push(res.data.data.event.event_id);
    }
    await untilStream(() => sse.payloads().length === ids.length, 10_000, 'the stream on the other instance');
    for (const p of sse.payloads()) expect(p.metadata.trace_id).toBe(TRACE);
    for (const id of ids) {
      await until(async () => (await getEvent(a, admin, id)).status === 'processed', 'the delivery');
      const stored = (await getEvent(b, admin, id)).metadata.traceparent as string;
      expect(stored.slice(3, 35)).toBe(TRACE);
      const got = receiver.requests.find((r) => r.json?.event_id === id)!;
      const sent = String(got.headers['traceparent']);
      expect(sent.slice(3, 35)).toBe(TRACE);
      await until(() => spansOf(otlp, id).some((s) => s.name === 'webhook.attempt'), 'the attempt span');
      const spans = spansOf(otlp, id);
      const commit = spans.find((s) => s.name === 'event.commit')!;
      const attempt = spans.find((s) => s.name === 'webhook.attempt')!;
      expect(`00-${TRACE}-${commit.spanId}-01`).toBe(stored);
      expect(attempt.parentSpanId).toBe(commit.spanId);
      expect(sent.slice(36, 52)).toBe(attempt.spanId);
    }
  });
});
