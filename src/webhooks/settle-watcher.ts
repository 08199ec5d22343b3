import type { Kysely } from 'kysely';
import type { Tables } from '../storage/tables.js';
import type { SettledDelivery } from './delivery-recorder.js';

export interface Settlement {
  id: string;
  status: 'delivered' | 'failed' | 'dropped';
  error: string | null;
}

// Deliveries made by other instances are noticed by reading the outbox this often.
const POLL_MS = 200;
const CHUNK = 500;

interface SignalWaits {
  stoppers: Set<(reason: unknown) => void>;
  onAbort: () => void;
}

/**
 * Waits for outbox rows to reach a final state: at once when this instance's dispatcher settles them (its
 * recorder tells), and by polling the outbox for rows another instance delivered. A row that disappeared (its
 * subscription was deleted) counts as dropped.
 */
export class SettleWatcher {
  private readonly waiting = new Map<string, (s: Settlement) => void>();
  private readonly unsubscribe: () => void;
  private timer: NodeJS.Timeout | undefined;
  /** The signals with waits open on them (one listener each, however many waits). */
  private readonly signals = new Map<AbortSignal, SignalWaits>();

  constructor(
    private readonly db: Kysely<Tables>,
    onSettled: (listener: (rows: SettledDelivery[]) => void) => () => void,
  ) {
    this.unsubscribe = onSettled((rows) => {
      for (const r of rows) this.settle({ id: r.id, status: r.status, error: r.error });
    });
  }

  /**
   * Resolves with the final state of each row; rejects when `signal` aborts. The watcher listens on a signal
   * once, however many waits are open on it: a parallel replay has up to a thousand at a time, and a
   * listener per wait would pile up on the replay's signal.
   */
  wait(ids: readonly string[], signal: AbortSignal): Promise<Settlement[]> {
    if (signal.aborted) return Promise.reject(signal.reason);
    const all = ids.map(
      (id) =>
        new Promise<Settlement>((resolve) => {
          this.waiting.set(id, resolve);
        }),
    );
    this.arm();
    const waits = this.waitsOn(signal);
    return new Promise<Settlement[]>((resolve, reject) => {
      waits.stoppers.add(reject);
      // The rows' promises only ever resolve, so this never rejects.
      void Promise.all(all).then((settled) => {
        waits.stoppers.delete(reject);
        // The signal's last open wait: its listener goes (a replay's signal outlives its waits).
        if (waits.stoppers.size === 0) this.forget(signal);
        resolve(settled);
      });
    }).finally(() => {
      for (const id of ids) this.waiting.delete(id);
    });
  }

  /** The waits open on `signal`, whose rejections one listener calls when it aborts. */
  private waitsOn(signal: AbortSignal): SignalWaits {
    let waits = this.signals.get(signal);
    if (waits === undefined) {
      const stoppers = new Set<(reason: unknown) => void>();
      const onAbort = () => {
        this.forget(signal);
        for (const stop of stoppers) stop(signal.reason);
      };
      waits = { stoppers, onAbort };
      this.signals.set(signal, waits);
      signal.addEventListener('abort', onAbort, { once: true });
    }
    return waits;
  }

  private forget(signal: AbortSignal): void {
    const waits = this.signals.get(signal);
    if (!waits) return;
    this.signals.delete(signal);
    signal.removeEventListener('abort', waits.onAbort);
  }

  close(): void {
    this.unsubscribe();
    for (const signal of [...this.signals.keys()]) this.forget(signal);
    clearTimeout(this.timer);
    this.waiting.clear();
  }

  private settle(s: Settlement): void {
    const resolve = this.waiting.get(s.id);
    if (!resolve) return;
    this.waiting.delete(s.id);
    resolve(s);
  }

  private arm(): void {
    if (this.timer || this.waiting.size === 0) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.poll()
        .catch(() => {})
        .finally(() => this.arm());
    }, POLL_MS);
    this.timer.unref();
  }

  private async poll(): Promise<void> {
    const ids = [...this.waiting.keys()];
    for (let i = 0; i < ids.length; i += CHUNK) {
      const chunk = ids.slice(i, i + CHUNK);
      const rows = await this.db
        .selectFrom('event_outbox')
        .select(['id', 'status', 'last_error'])
        .where('id', 'in', chunk)
        .execute();
      const seen = new Set(rows.map((r) => r.id));
      for (const r of rows) {
        if (r.status === 'delivered' || r.status === 'failed' || r.status === 'dropped') {
          this.settle({ id: r.id, status: r.status, error: r.last_error });
        }
      }
      for (const id of chunk) {
        if (!seen.has(id)) this.settle({ id, status: 'dropped', error: 'the delivery no longer exists' });
      }
    }
  }
}
