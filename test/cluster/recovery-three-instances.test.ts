import { createHmac } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { untilListening } from '../helpers/cluster-sync.js';
import { startPlatform, type TestPlatform } from '../helpers/test-platform.js';
import { Receiver } from '../webhooks/receiver.js';
import { createSubscription, emit, FAST_WEBHOOKS, until } from '../webhooks/webhook-fixtures.js';

/**
 * Three instances on one PostgreSQL and Redis, each with its dispatcher: a recovery started on one sends each
 * failed delivery of the window once (whichever instance claims it), its task reads the same everywhere, and a
 * secret rotated on one instance signs what every instance delivers.
 */
describe('recovery and rotation on three instances', { timeout: 90_000 }, () => {
  let a: TestPlatform;
  let b: TestPlatform;
  let c: TestPlatform;
  let token: Map<TestPlatform, string>;
  let receiver: Receiver;
  let down = true;

  beforeAll(async () => {
    receiver = new Receiver();
    await receiver.start();
    receiver.respond = () => ({ status: down ? 500 : 200 });
    a = await startPlatform(FAST_WEBHOOKS);
    b = await startPlatform(FAST_WEBHOOKS, { storage: a.storage });
    c = await startPlatform(FAST_WEBHOOKS, { storage: a.storage });
    for (const [from, to] of [
      [a, b],
      [a, c],
      [b, a],
      [c, a],
    ] as const) {
      await untilListening(from, to);
    }
    token = new Map();
    for (const i of [a, b, c]) token.set(i, await i.adminToken());
  }, 90_000);
  afterAll(async () => {
    await c?.close();
    await b?.close();
    await a?.close();
    await receiver?.close();
  });

  it('recovers each failed delivery once, whichever instance sends it', async () => {
    const sub = await createSubscription(a, token.get(a)!, {
      event_patterns: ['trio.*'],
      webhook_config: {
        url: `${receiver.url}/trio`,
        retry_policy: { max_attempts: 1, retry_delay_seconds: 1, exponential_backoff: false },
      },
    });
    const since = new Date().toISOString();
    const failed: string[] = [];
    const instances = [a, b, c];
    for (let n = 0; n < 9; n += 1) {
      const on = instances[n % 3]!;
      failed.push(await emit(on, token.get(on)!, { event_type: 'trio.x', data: { n } }));
    }
    const list = async (on: TestPlatform) =>
      (
        await on.request('GET', `/api/v1/events/subscriptions/${sub.id}/deliveries?per_page=100`, {
          token: token.get(on)!,
        })
      ).data.data.deliveries as { status: string }[];
    await until(async () => {
      const all = await list(b);
      return all.length === 9 && all.every((d) => d.status === 'failed');
    }, 'nine failed deliveries');
    expect(receiver.at('/trio')).toHaveLength(9);
    down = false;

    const res = await c.request('POST', `/api/v1/events/subscriptions/${sub.id}/recover`, {
      token: token.get(c)!,
      body: { since },
    });
    expect(res.statusCode, res.body).toBe(202);
    const taskId = res.data.data.task_id as string;
    let task: any;
    await until(
      async () => {
        task = (await a.request('GET', `/api/v1/tasks/${taskId}`, { token: token.get(a)! })).data.data;
        return task.status !== 'running';
      },
      'the recovery task to finish',
      30_000,
    );
    expect(task.status).toBe('completed');
    expect(task.result).toMatchObject({ failed_resent: 9, deliveries_delivered: 9, deliveries_failed: 0 });
    // The same record on every instance.
    const onB = (await b.request('GET', `/api/v1/tasks/${taskId}`, { token: token.get(b)! })).data.data;
    expect(onB.result).toEqual(task.result);
    // Each failed event exactly once more: 9 failed tries, then 9 recovered deliveries, no duplicate.
    await new Promise((r) => setTimeout(r, 500));
    const resent = receiver
      .at('/trio')
      .slice(9)
      .map((r) => r.json.event_id as string);
    expect([...resent].sort()).toEqual([...failed].sort());
    expect(
      new Set(
        receiver
          .at('/trio')
          .slice(9)
          .map((r) => r.headers['webhook-id']),
      ).size,
    ).toBe(9);
    expect(
      receiver
        .at('/trio')
        .slice(9)
        .every((r) => r.headers['x-platform-replay'] === taskId),
    ).toBe(true);
    expect((await list(a)).filter((d) => d.status === 'delivered')).toHaveLength(9);
  });

  it('a secret rotated on one instance signs twice what every instance delivers', async () => {
    const old = 'trio-old-secret-123456';
    const sub = await createSubscription(a, token.get(a)!, {
      event_patterns: ['rotor.*'],
      webhook_config: { url: `${receiver.url}/rotor`, secret: old },
    });
    const res = await b.request('POST', `/api/v1/events/subscriptions/${sub.id}/secret/rotate`, {
      token: token.get(b)!,
      body: {},
    });
    expect(res.statusCode, res.body).toBe(200);
    const fresh = res.data.data.secret as string;
    for (const on of [a, b, c]) await emit(on, token.get(on)!, { event_type: 'rotor.x', data: {} });
    await until(() => receiver.at('/rotor').length >= 3, 'three deliveries');
    for (const req of receiver.at('/rotor')) {
      const id = String(req.headers['webhook-id']);
      const ts = String(req.headers['webhook-timestamp']);
      const sign = (s: string) =>
        `v1,${createHmac('sha256', Buffer.from(s, 'utf8')).update(`${id}.${ts}.${req.body}`).digest('base64')}`;
      expect(String(req.headers['webhook-signature']).split(' ')).toEqual([sign(fresh), sign(old)]);
    }
  });
});
