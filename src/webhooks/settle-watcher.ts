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

/**
 * Waits for outbox rows to reach a final state: at once when this instance's dispatcher settles them (its
 * recorder tells), and by polling the outbox for rows another instance delivered. A row that disappeared (its
 * subscription was deleted) counts as dropped.
 */
export class SettleWatcher {
  private readonly waiting = new Map<string, (s: Settlement) => void>();
  private readonly unsubscribe: () => void;
  private timer: NodeJS.Timeout | undefined;
  private readonly stoppers = new Map<AbortSignal, Set<(reason: unknown) => void>>();
  private readonly detach: (() => void)[] = [];

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
    const stoppers = this.stoppersOf(signal);
    return new Promise<Settlement[]>((resolve, reject) => {
      stoppers.add(reject);
      // The rows' promises only ever resolve, so this never rejects.
      void Promise.all(all).then((settled) => {
        stoppers.delete(reject);
        resolve(settled);
      });
    }).finally(() => {
      for (const id of ids) this.waiting.delete(id);
    });
  }

  /** The rejections of the waits open on `signal`, all called by one listener when it aborts. */
  private stoppersOf(signal: AbortSignal): Set<(reason: unknown) => void> {
    let stoppers = this.stoppers.get(signal);
    if (stoppers === undefined) {
      const set = new Set<(reason: unknown) => void>();
      stoppers = set;
      this.stoppers.set(signal, set);
      const onAbort = () => {
        const open = [...set];
        set.clear();
        for (const stop of open) stop(signal.reason);
      };
      signal.addEventListener('abort', onAbort, { once: true });
      this.detach.push(() => signal.removeEventListener('abort', onAbort));
    }
    return stoppers;
  }

  close(): void {
    this.unsubscribe();
    for (const detach of this.detach.splice(0)) detach();
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
