import { verify } from '@octokit/webhooks-methods';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPlatform, type TestPlatform } from '../helpers/test-platform.js';
import { tempRepository, writePlugin } from '../plugins/plugin-fixtures.js';
import { RawSse, until as untilStream, WsClient } from '../streams/stream-clients.js';
import { Receiver } from '../webhooks/receiver.js';
import { createSubscription, FAST_WEBHOOKS, getEvent, until } from '../webhooks/webhook-fixtures.js';

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-0[01]$/;
const CALLER_TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const CALLER_SPAN = '00f067aa0ba902b7';
const CALLER = `00-${CALLER_TRACE}-${CALLER_SPAN}-01`;

/** A plugin that keeps the metadata of the events its handler is called with, as the plugin docs show. */
const TRACED_PLUGIN = `
const seen = [];
export default {
  async setup(ctx) {
    await ctx.events.subscribe(['traced.**'], async (event) => {
      seen.push({ event_id: event.event_id, metadata: event.metadata });
    }, { name: 'traced' });
    ctx.routes.get('/seen', () => seen);
  },
};`;

async function startTraced(extra: Record<string, unknown> = {}) {
  const repo = tempRepository();
  writePlugin(
    repo,
    {
      name: 'tracer',
      permissions: ['events:subscribe', 'http:routes'],
      events: { emits: [], subscribes: ['traced.**'] },
    },
    TRACED_PLUGIN,
  );
  const t = await startPlatform({ ...FAST_WEBHOOKS, plugins: { repositories: [repo] }, ...extra });
  const admin = await t.adminToken();
  const res = await t.request('POST', '/api/v1/admin/plugins/install', {
    token: admin,
    body: { source: 'repository', plugin_name: 'tracer' },
  });
  expect(res.statusCode, res.body).toBe(201);
  return { t, admin };
}

const pluginSaw = async (t: TestPlatform, admin: string, eventId: string) => {
  const seen = (await t.request('GET', '/api/v1/ext/tracer/seen', { token: admin })).data.data as {
    event_id: string;
    metadata: Record<string, string>;
  }[];
  return seen.find((s) => s.event_id === eventId);
};

const emitWith = async (t: TestPlatform, token: string, headers: Record<string, string>, type: string) => {
  const res = await t.request('POST', '/api/v1/events', {
    token,
    headers,
    body: { event_type: type, data: {} },
  });
  expect(res.statusCode, res.body).toBe(201);
  return res.data.data.event.event_id as string;
};

describe('trace context with tracing off (the default)', { timeout: 60_000 }, () => {
  let t: TestPlatform;
  let admin: string;
  let base: string;
  const receiver = new Receiver();
  let secret: string;
  const open: { close(): void }[] = [];

  beforeAll(async () => {
    ({ t, admin } = await startTraced());
    base = await t.platform.listen();
    await receiver.start();
    ({ secret } = await createSubscription(t, admin, {
      name: 'traced',
      event_patterns: ['traced.*'],
      delivery_method: 'webhook',
      webhook_config: { url: `${receiver.url}/hook` },
    }));
  });
  afterAll(async () => {
    for (const c of open) c.close();
    await t?.close();
    await receiver.close();
  });

  it("sends the caller's trace to the webhook receiver under a span of its own, signatures unchanged", async () => {
    const id = await emitWith(
      t,
      admin,
      { traceparent: CALLER, tracestate: 'vendor=abc,other=1' },
      'traced.one',
    );
    await until(() => receiver.requests.some((r) => r.json?.event_id === id), 'the delivery');
    const got = receiver.requests.find((r) => r.json?.event_id === id)!;
    const [, traceId, parentId] = TRACEPARENT.exec(String(got.headers['traceparent'])) ?? [];
    expect(traceId).toBe(CALLER_TRACE);
    expect(parentId).toBeDefined();
    expect(parentId).not.toBe(CALLER_SPAN);
    expect(got.headers['tracestate']).toBe('vendor=abc,other=1');
    // The body (and what is signed) is the same as without a trace: the header alone carries it.
    expect(got.json.metadata).toEqual({ correlation_id: expect.any(String) });
    expect(await verify(secret, got.body, String(got.headers['x-platform-signature-256']))).toBe(true);
    const standard = new Webhook(`whsec_${Buffer.from(secret, 'utf8').toString('base64')}`);
    expect(standard.verify(got.body, got.headers as Record<string, string>)).toMatchObject({ event_id: id });

    const event = await getEvent(t, admin, id);
    expect(event.metadata).toMatchObject({ trace_id: CALLER_TRACE, tracestate: 'vendor=abc,other=1' });
    expect(event.metadata.traceparent).toMatch(TRACEPARENT);
    const listed = await t.request('GET', '/api/v1/events?event_type=traced.one', { token: admin });
    expect(listed.data.data.events[0].metadata.trace_id).toBe(CALLER_TRACE);
  });

  it('begins a new valid trace for an emit without one, or with an invalid one (its tracestate dropped)', async () => {
    const plain = await emitWith(t, admin, {}, 'traced.two');
    const invalid = await emitWith(
      t,
      admin,
      { traceparent: `00-${'0'.repeat(32)}-${CALLER_SPAN}-01`, tracestate: 'vendor=abc' },
      'traced.two',
    );
    await until(
      () => [plain, invalid].every((id) => receiver.requests.some((r) => r.json?.event_id === id)),
      'the deliveries',
    );
    const traces = new Set<string>();
    for (const id of [plain, invalid]) {
      const got = receiver.requests.find((r) => r.json?.event_id === id)!;
      const [, traceId] = TRACEPARENT.exec(String(got.headers['traceparent'])) ?? [];
      expect(traceId).toMatch(/^[0-9a-f]{32}$/);
      expect(traceId).not.toBe('0'.repeat(32));
      expect(got.headers['tracestate']).toBeUndefined();
      const event = await getEvent(t, admin, id);
      expect(event.metadata.trace_id).toBe(traceId);
      expect(event.metadata.tracestate).toBeUndefined();
      traces.add(traceId!);
    }
    expect(traces.size).toBe(2);
  });

  it('gives each retry of a delivery a span of its own in the same trace', async () => {
    let failures = 1;
    receiver.respond = (r) =>
      r.json?.event_type === 'traced.retry' && failures-- > 0 ? { status: 503 } : {};
    const id = await emitWith(t, admin, { traceparent: CALLER }, 'traced.retry');
    await until(async () => (await getEvent(t, admin, id)).status === 'processed', 'the retried delivery');
    receiver.respond = () => ({});
    const sent = receiver.requests
      .filter((r) => r.json?.event_id === id)
      .map((r) => String(r.headers['traceparent']));
    expect(sent).toHaveLength(2);
    expect(sent.map((h) => h.slice(3, 35))).toEqual([CALLER_TRACE, CALLER_TRACE]);
    expect(sent[0]).not.toBe(sent[1]);
  });

  it('carries the trace in SSE and WebSocket messages, under metadata', async () => {
    const sse = new RawSse(`${base}/api/v1/events/stream?patterns=traced.*`, {
      authorization: `Bearer ${admin}`,
    });
    open.push(sse);
    await sse.ready;
    const ws = new WsClient(`${base.replace(/^http/, 'ws')}/api/v1/events/stream?token=${admin}`);
    open.push(ws);
    await ws.opened;
    ws.send({ action: 'subscribe', patterns: ['traced.*'] });
    await untilStream(() => ws.of('subscribed').length === 1);
    const id = await emitWith(t, admin, { traceparent: CALLER }, 'traced.live');
    await untilStream(() => sse.payloads().some((p) => p.event_id === id), 5000, 'the SSE message');
    await untilStream(() => ws.of('event').some((m) => m.event.event_id === id), 5000, 'the WS message');
    const stored = (await getEvent(t, admin, id)).metadata.traceparent;
    const fromSse = sse.payloads().find((p) => p.event_id === id);
    const fromWs = ws.of('event').find((m) => m.event.event_id === id).event;
    for (const message of [fromSse, fromWs]) {
      expect(message.metadata).toEqual({ trace_id: CALLER_TRACE, traceparent: stored });
    }
  });

  it("hands a plugin's event handler the trace in event.metadata, under a span of the call", async () => {
    const id = await emitWith(t, admin, { traceparent: CALLER, tracestate: 'vendor=p' }, 'traced.plugin');
    await until(async () => (await pluginSaw(t, admin, id)) !== undefined, 'the plugin call');
    const { metadata } = (await pluginSaw(t, admin, id))!;
    const [, traceId, parentId] = TRACEPARENT.exec(metadata['traceparent'] ?? '') ?? [];
    expect(traceId).toBe(CALLER_TRACE);
    expect(parentId).not.toBe(CALLER_SPAN);
    expect(metadata['tracestate']).toBe('vendor=p');
    expect(metadata['correlation_id']).toEqual(expect.any(String));
  });
});

interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  attributes: { key: string; value: Record<string, unknown> }[];
  status?: { code?: number };
}

/** The spans a Receiver got as OTLP/HTTP JSON exports, with the service name of each. */
function exportedSpans(otlp: Receiver): (OtlpSpan & { service: string })[] {
  return otlp.at('/v1/traces').flatMap((r) =>
    (r.json?.resourceSpans ?? []).flatMap(
      (rs: { resource: { attributes: OtlpSpan['attributes'] }; scopeSpans: { spans: OtlpSpan[] }[] }) => {
        const service = rs.resource.attributes.find((a) => a.key === 'service.name')?.value['stringValue'];
        return rs.scopeSpans.flatMap((ss) => ss.spans.map((s) => ({ ...s, service: String(service) })));
      },
    ),
  );
}

const attribute = (span: OtlpSpan, key: string) => {
  const value = span.attributes.find((a) => a.key === key)?.value;
  return value === undefined ? undefined : Object.values(value)[0];
};

describe('traces exported over OTLP/HTTP', { timeout: 60_000 }, () => {
  let t: TestPlatform;
  let admin: string;
  const otlp = new Receiver();
  const receiver = new Receiver();

  beforeAll(async () => {
    await otlp.start();
    await receiver.start();
    ({ t, admin } = await startTraced({
      tracing: { otlp_endpoint: otlp.url, service_name: 'orders-platform', export_interval_ms: 100 },
    }));
    await createSubscription(t, admin, {
      name: 'traced',
      event_patterns: ['traced.*'],
      delivery_method: 'webhook',
      webhook_config: { url: `${receiver.url}/hook` },
    });
  });
  afterAll(async () => {
    await t?.close();
    await receiver.close();
    await otlp.close();
  });

  it('exports one trace: emit → commit → each delivery attempt and plugin call, with correct parents', async () => {
    let failures = 1;
    receiver.respond = () => (failures-- > 0 ? { status: 500 } : {});
    const id = await emitWith(t, admin, { traceparent: CALLER }, 'traced.exported');
    await until(async () => (await getEvent(t, admin, id)).status === 'processed', 'the deliveries');
    await until(async () => (await pluginSaw(t, admin, id)) !== undefined, 'the plugin call');
    const ofEvent = () =>
      exportedSpans(otlp).filter(
        (s) => s.traceId === CALLER_TRACE && attribute(s, 'platform.event.id') === id,
      );
    await until(
      () =>
        ofEvent().filter((s) => s.name === 'webhook.attempt').length === 2 &&
        ofEvent().some((s) => s.name === 'plugin.call'),
      'the exported spans',
    );
    const spans = ofEvent();
    expect(new Set(spans.map((s) => s.service))).toEqual(new Set(['orders-platform']));
    const [emitSpan] = spans.filter((s) => s.name === 'event.emit');
    const [commit] = spans.filter((s) => s.name === 'event.commit');
    expect(emitSpan?.parentSpanId).toBe(CALLER_SPAN);
    expect(commit?.parentSpanId).toBe(emitSpan?.spanId);
    const attempts = spans.filter((s) => s.name === 'webhook.attempt');
    const [call] = spans.filter((s) => s.name === 'plugin.call');
    for (const child of [...attempts, call!]) expect(child.parentSpanId).toBe(commit?.spanId);
    // The failed attempt is marked failed (status code 2, ERROR) with the target's status.
    const statuses = attempts
      .map((s) => attribute(s, 'http.response.status_code'))
      .map(Number)
      .sort();
    expect(statuses).toEqual([200, 500]);
    expect(
      attempts.find((s) => Number(attribute(s, 'http.response.status_code')) === 500)?.status?.code,
    ).toBe(2);

    // The receiver's parent is the attempt's span; the plugin's is its call's; the event names the commit.
    const sent = receiver.requests
      .filter((r) => r.json?.event_id === id)
      .map((r) => String(r.headers['traceparent']));
    expect(new Set(sent.map((h) => h.slice(36, 52)))).toEqual(new Set(attempts.map((s) => s.spanId)));
    expect((await pluginSaw(t, admin, id))!.metadata['traceparent']!.slice(36, 52)).toBe(call!.spanId);
    expect((await getEvent(t, admin, id)).metadata.traceparent).toBe(
      `00-${CALLER_TRACE}-${commit!.spanId}-01`,
    );
  });

  it('records a root span for an emit without a trace, and follows a caller that did not sample (flags 00)', async () => {
    const fresh = await emitWith(t, admin, {}, 'traced.fresh');
    const unsampled = await emitWith(
      t,
      admin,
      { traceparent: `00-${'a'.repeat(32)}-${CALLER_SPAN}-00` },
      'traced.fresh',
    );
    const freshTrace = (await getEvent(t, admin, fresh)).metadata.trace_id as string;
    const rootOf = () =>
      exportedSpans(otlp).find((s) => s.name === 'event.emit' && attribute(s, 'platform.event.id') === fresh);
    await until(() => rootOf() !== undefined, 'the root emit span');
    const root = rootOf();
    expect(root?.traceId).toBe(freshTrace);
    expect(root?.parentSpanId ?? '').toBe('');
    // Not sampled by its caller: nothing recorded, yet the context goes on (flags kept) to the receiver.
    await until(
      () => receiver.requests.some((r) => r.json?.event_id === unsampled),
      'the unsampled delivery',
    );
    const got = receiver.requests.find((r) => r.json?.event_id === unsampled)!;
    expect(String(got.headers['traceparent'])).toMatch(new RegExp(`^00-${'a'.repeat(32)}-[0-9a-f]{16}-00$`));
    expect(exportedSpans(otlp).some((s) => s.traceId === 'a'.repeat(32))).toBe(false);
  });
});
