import type { SharedState } from '../cluster/shared-state.js';
import { newId } from '../kernel/new-id.js';
import type { DiagnosticOutcome, DiagnosticTest } from '../kernel/service.js';
import { burst, latencyFigures, round, timed } from './diagnostics-measure.js';

const ROUND_TRIP_TIMEOUT_MS = 2_000;

/**
 * Shared-state diagnostics (memory or Redis). connectivity: a ping and a pub/sub round trip.
 * performance: 50 timed pings and 10 round trips. stress: 500 pings, 25 at once, and 20 concurrent round
 * trips. Nothing is stored: pings and messages on a channel of the run's own.
 */
export async function diagnoseSharedState(
  shared: SharedState,
  test: DiagnosticTest,
  signal: AbortSignal,
): Promise<DiagnosticOutcome> {
  switch (test) {
    case 'connectivity': {
      const pingMs = await timed(() => shared.ping());
      const trip = await roundTrips(shared, 1, 1, signal);
      return {
        status: trip.failed > 0 ? 'fail' : 'pass',
        details: { backend: shared.kind, ping_ms: round(pingMs), pubsub_round_trip_ms: trip.figures.max_ms },
      };
    }
    case 'performance': {
      const pings: number[] = [];
      for (let i = 0; i < 50 && !signal.aborted; i++) pings.push(await timed(() => shared.ping()));
      const trips = await roundTrips(shared, 10, 1, signal);
      const ping = latencyFigures(pings);
      return {
        status: trips.failed > 0 ? 'fail' : ping.p95_ms > 50 ? 'warning' : 'pass',
        details: {
          backend: shared.kind,
          ping,
          pubsub_round_trip: trips.figures,
          lost_messages: trips.failed,
        },
      };
    }
    case 'stress': {
      const pings = await burst(500, 25, signal, () => shared.ping());
      const trips = await roundTrips(shared, 20, 20, signal);
      return {
        status: pings.errors > 0 || trips.failed > 0 ? 'fail' : 'pass',
        details: {
          backend: shared.kind,
          pings: pings.durationsMs.length,
          ping_errors: pings.errors,
          pings_per_second: round(pings.durationsMs.length / Math.max(0.001, pings.wallMs / 1000)),
          ping: latencyFigures(pings.durationsMs),
          pubsub_round_trip: trips.figures,
          lost_messages: trips.failed,
        },
      };
    }
  }
}

/** Publishes `count` messages on a fresh channel (`concurrency` in flight) and times each one's arrival. */
async function roundTrips(shared: SharedState, count: number, concurrency: number, signal: AbortSignal) {
  const channel = `diagnostics.${newId('diag')}`;
  const waiting = new Map<string, () => void>();
  const unsubscribe = shared.subscribe(channel, (message) => {
    const id = (message as { id?: unknown }).id;
    if (typeof id === 'string') waiting.get(id)?.();
  });
  try {
    // A Redis subscription becomes active asynchronously; a first message that arrives proves it is.
    await waitForSubscription(shared, channel, waiting);
    const outcome = await burst(count, concurrency, signal, async (i) => {
      const id = `m${i}`;
      const arrived = new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error('message lost')), ROUND_TRIP_TIMEOUT_MS);
        waiting.set(id, () => {
          clearTimeout(timer);
          resolve();
        });
      });
      await shared.publish(channel, { id });
      await arrived;
      waiting.delete(id);
    });
    return { figures: latencyFigures(outcome.durationsMs), failed: outcome.errors };
  } finally {
    unsubscribe();
  }
}

async function waitForSubscription(shared: SharedState, channel: string, waiting: Map<string, () => void>) {
  const deadline = Date.now() + ROUND_TRIP_TIMEOUT_MS;
  let ready = false;
  waiting.set('ready', () => {
    ready = true;
  });
  while (!ready && Date.now() < deadline) {
    await shared.publish(channel, { id: 'ready' });
    await new Promise((r) => setTimeout(r, 20));
  }
  waiting.delete('ready');
}
