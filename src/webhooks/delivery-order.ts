/** What orders deliveries: the event's priority (10 most urgent) and its global sequence. */
export interface Ranked {
  priority: number;
  sequence: number;
}

/** The order deliveries go out in from a backlog: highest priority first, then lowest sequence. */
export const deliveryOrder = (a: Ranked, b: Ranked): number =>
  b.priority - a.priority || a.sequence - b.sequence;

/** Inserts `item` into `queue` (kept in `deliveryOrder`) after every item that goes before or with it. */
export function insertInOrder<T extends Ranked>(queue: T[], item: T): void {
  let lo = 0;
  let hi = queue.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (deliveryOrder(queue[mid] as T, item) <= 0) lo = mid + 1;
    else hi = mid;
  }
  queue.splice(lo, 0, item);
}
