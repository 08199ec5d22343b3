import type { KyselyPlugin } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EventCipher, newEventKey } from '../../src/events/event-cipher.js';
import { nowIso } from '../../src/kernel/new-id.js';
import { DeliveryRecorder, type DeliveryResult } from '../../src/webhooks/delivery-recorder.js';
import { OutboxStore } from '../../src/webhooks/outbox-store.js';
import { startPlatform, type TestPlatform } from '../helpers/test-platform.js';
import { Receiver } from './receiver.js';
import { createSubscription, emit, getSubscription } from './webhook-fixtures.js';

/**
 * What one write of the delivery recorder costs in statements must not grow with the number of subscriptions
 * (or deliveries) it concerns: their counters, their moves to `error` and the outbox rows of retried and failed
 * deliveries each go in one statement, on the real database of either backend.
 */
describe('a delivery recorder write', { timeout: 60_000 }, () => {
  let t: TestPlatform;
  let admin: string;
  let receiver: Receiver;
  let eventId: string;
  let next = 0;

  beforeAll(async () => {
    // One exhausted delivery puts a subscription in error.
    t = await startPlatform({ events: { subscription_error_threshold: 1 } });
    admin = await t.adminToken();
    receiver = new Receiver();
    await receiver.start();
    // An event no subscription takes: the results below are the only ones about it.
    eventId = await emit(t, admin, { event_type: 'statements.event', data: {} });
  });
  afterAll(async () => {
    await t.close();
    await receiver.close();
  });

  /** Writes a failed and a retried delivery for each of `n` new subscriptions in one write; answers its statements. */
  async function writeFor(
    n: number,
  ): Promise<{ statements: number[]; subscriptions: string[]; moved: string[] }> {
    const subscriptions: string[] = [];
    for (let i = 0; i < n; i++) {
      const sub = await createSubscription(t, admin, {
        event_patterns: ['statements.never'],
        webhook_config: { url: `${receiver.url}/never` },
      });
      subscriptions.push(sub.id);
    }
    const { db, dialect } = t.platform.context.database;
    const statements: number[] = [];
    const moved: string[] = [];
    const recorder = new DeliveryRecorder({
      db,
      dialect,
      // Counts what runs inside each write's transaction.
      bookkeeping: (work) =>
        db.transaction().execute(async (trx) => {
          let count = 0;
          const counter: KyselyPlugin = {
            transformQuery: (args) => args.node,
            transformResult: async (args) => {
              count += 1;
              return args.result;
            },
          };
          const result = await work(trx.withPlugin(counter));
          statements.push(count);
          return result;
        }),
      outbox: new OutboxStore(db, dialect, new EventCipher(newEventKey()), (work) =>
        db.transaction().execute(work),
      ),
      errorThreshold: () => 1,
      disableAfterHours: () => 120,
      onSubscriptionError: async (ids) => {
        moved.push(...ids);
      },
      onWritten: () => {},
      reportError: (err) => {
        throw err;
      },
    });
    const at = nowIso();
    const result = (subscription: string, outcome: 'failed' | 'retry'): DeliveryResult => ({
      delivery: {
        id: `obx_statements_${++next}`,
        event_id: eventId,
        subscription_id: subscription,
        sequence: 0,
        priority: 0,
        attempts: 0,
        replay_id: null,
      },
      owner: 'statement-count',
      outcome,
      attempt: 1,
      at,
      responseStatus: 500,
      latencyMs: 1,
      error: 'HTTP 500',
      ...(outcome === 'retry' ? { nextAttemptAt: at } : {}),
      actor: 'webhook_dispatcher',
    });
    // Added at once: they go in one write.
    for (const id of subscriptions) {
      recorder.add(result(id, 'retry'));
      recorder.add(result(id, 'failed'));
    }
    await recorder.flush();
    expect(recorder.failedWrites).toBe(0);
    return { statements, subscriptions, moved };
  }

  it('runs as many statements for 16 subscriptions as for 2, and each is counted and put in error', async () => {
    // 4 and 32 attempt rows: one insert each on SQLite too (insertRows: a power of two of rows per statement).
    const few = await writeFor(2);
    const many = await writeFor(16);
    expect(few.statements).toHaveLength(1);
    expect(many.statements).toHaveLength(1);
    expect(many.statements[0]).toBe(few.statements[0]);
    // The statements did their work: every subscription counted its failure and went to error.
    for (const write of [few, many]) {
      expect(new Set(write.moved)).toEqual(new Set(write.subscriptions));
      for (const id of write.subscriptions) {
        const sub = await getSubscription(t, admin, id);
        expect(sub.status).toBe('error');
        expect(sub.events_failed).toBe(1);
        expect(sub.last_error).toBe('HTTP 500');
      }
    }
  });
});
