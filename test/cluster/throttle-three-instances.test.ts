import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { WebhookDispatcher } from '../../src/webhooks/webhook-dispatcher.js';
import { untilListening } from '../helpers/cluster-sync.js';
import { startPlatform, type TestPlatform } from '../helpers/test-platform.js';
import { EDGE_MS, windowCounts } from '../webhooks/arrival-windows.js';
import { Receiver } from '../webhooks/receiver.js';
import { startReceiverProcess } from '../webhooks/receiver-process.js';
import { createSubscription, emit, getEvent, until } from '../webhooks/webhook-fixtures.js';

// The pause the target asks for (Retry-After, seconds): longer than emitting and claiming take on a loaded host.
const PAUSE_S = 5;

/**
 * Three instances on one PostgreSQL database and Redis deliver to one target limited to 5 deliveries a second:
 * each instance holds some of the backlog (one request at a time per subscription, so a lane holds at most 8),
 * and the pace they share in Redis keeps the target at 5/s. A target's Retry-After pauses the subscription on
 * every instance.
 */
describe('throttling with three instances', { timeout: 90_000 }, () => {
  const settings = {
    webhooks: { retry_delay_scale: 0.05, poll_interval_ms: 50, max_concurrency_per_subscription: 1 },
  };
  let instances: TestPlatform[] = [];
  let tokens: string[] = [];

  beforeAll(async () => {
    const a = await startPlatform(settings);
    const b = await startPlatform(settings, { storage: a.storage });
    const c = await startPlatform(settings, { storage: a.storage });
    instances = [a, b, c];
    await untilListening(a, b);
    await untilListening(a, c);
    await untilListening(b, a);
    tokens = await Promise.all(instances.map((i) => i.adminToken()));
  });
  afterAll(async () => {
    for (const i of instances.slice(1).reverse()) await i.platform.close();
    await instances[0]?.close();
  });

  const delivered = () =>
    instances.map(
      (i) =>
        (i.platform.context.registry.get('webhook_dispatcher') as WebhookDispatcher).metrics()
          .deliveries_delivered ?? 0,
    );

  it('never lets a target limited to 5/s see more than 5 in a second, whichever instances send', async () => {
    const target = await startReceiverProcess();
    try {
      const [a] = instances;
      await createSubscription(a!, tokens[0]!, {
        event_patterns: ['trio.*'],
        webhook_config: { url: `${target.url}/trio`, rate_limit: 5 },
      });
      const before = delivered();
      // Emitted through all three at once: every instance is woken and claims its share.
      const ids = await Promise.all(
        Array.from({ length: 40 }, (_, n) =>
          emit(instances[n % 3]!, tokens[n % 3]!, { event_type: 'trio.event', data: { n } }),
        ),
      );
      await until(() => target.at('/trio').length >= 40, 'every delivery', 40_000);
      const arrivals = target.at('/trio');
      expect(arrivals).toHaveLength(40);
      expect(new Set(arrivals.map((r) => r.event_id))).toEqual(new Set(ids));
      expect(arrivals.every((r) => r.attempt === 1)).toBe(true);
      const counts = windowCounts(
        arrivals.map((r) => r.at),
        EDGE_MS,
      );
      expect(counts.inner, counts.gaps).toBeLessThanOrEqual(5);
      expect(counts.second, counts.gaps).toBeLessThanOrEqual(6);
      expect(arrivals.at(-1)!.at - arrivals[0]!.at).toBeGreaterThanOrEqual(39 * 200 - 2 * EDGE_MS);
      // More than one instance sent: the limit held across them, not within one. An instance counts a delivery
      // once it has read the answer, a moment after the receiver has the request.
      const sent = () => delivered().reduce((x, n, i) => x + n - before[i]!, 0);
      await until(() => sent() >= 40, 'every delivery counted by its instance', 10_000);
      const made = delivered().map((n, i) => n - before[i]!);
      expect(made.reduce((x, y) => x + y, 0)).toBe(40);
      expect(made.filter((n) => n > 0).length).toBeGreaterThanOrEqual(2);
    } finally {
      await target.close();
    }
  });

  it("pauses the subscription on every instance for a 429's Retry-After", async () => {
    const receiver = new Receiver();
    await receiver.start();
    receiver.respond = (req) =>
      receiver.at(req.path).length === 1 ? { status: 429, headers: { 'retry-after': String(PAUSE_S) } } : {};
    try {
      const [a] = instances;
      await createSubscription(a!, tokens[0]!, {
        event_patterns: ['halt.*'],
        webhook_config: {
          url: `${receiver.url}/halt`,
          retry_policy: { max_attempts: 3, retry_delay_seconds: 1, exponential_backoff: false },
        },
      });
      const first = await emit(a!, tokens[0]!, { event_type: 'halt.event', data: { n: 0 } });
      await until(
        async () => (await getEvent(a!, tokens[0]!, first)).delivery_info.delivery_attempts.length === 1,
        'the 429 to be recorded',
      );
      const refused = receiver.at('/halt')[0]!;
      const before = delivered();
      // More than one instance holds some (8 each at most, one request at a time): whichever does, they wait.
      await Promise.all(
        Array.from({ length: 30 }, (_, k) =>
          emit(instances[k % 3]!, tokens[k % 3]!, { event_type: 'halt.event', data: { n: k + 1 } }),
        ),
      );
      // Emitted (and claimed at once) well inside the pause: an instance that did not hear of it would send now.
      expect(performance.now() - refused.at).toBeLessThan(PAUSE_S * 1000 - 1000);
      await until(() => receiver.at('/halt').length >= 32, 'the retry and the 30 held deliveries', 20_000);
      const later = receiver.at('/halt').slice(1);
      expect(new Set(later.map((r) => r.json.data.n))).toEqual(
        new Set(Array.from({ length: 31 }, (_, n) => n)),
      );
      const made = delivered().map((n, i) => n - before[i]!);
      expect(made.filter((n) => n > 0).length).toBeGreaterThanOrEqual(2);
      // Heard from the cluster bus a few milliseconds after the 429: the pause is measured from then.
      for (const r of later) expect(r.at - refused.at).toBeGreaterThanOrEqual(PAUSE_S * 1000 - 5);
    } finally {
      await receiver.close();
    }
  });
});
