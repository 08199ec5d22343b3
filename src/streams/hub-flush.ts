import type { HubBatch } from './hub-batch.js';
import type { StreamConnection } from './stream-connection.js';

export interface Delivery {
  readonly batch: HubBatch;
  /** The connections of one audience group when the flush began. */
  readonly members: readonly StreamConnection[];
}

/**
 * One flush of the stream hub, run a slice at a time so that writing to thousands of clients does not hold the
 * event loop (API requests, emits) for the whole of it. Each connection gets its deliveries in order; the
 * hub starts no other flush until this one is done.
 */
export class HubFlush {
  private delivery = 0;
  private member = 0;

  constructor(
    private readonly deliveries: readonly Delivery[],
    private readonly failed: (connection: StreamConnection, err: unknown) => void,
  ) {}

  /** Offers batches to up to `writes` connections; true once every delivery is made. */
  run(writes: number): boolean {
    let left = writes;
    while (this.delivery < this.deliveries.length) {
      const { batch, members } = this.deliveries[this.delivery]!;
      while (this.member < members.length) {
        if (left-- <= 0) return false;
        const connection = members[this.member++]!;
        try {
          connection.offerBatch(batch);
        } catch (err) {
          this.failed(connection, err);
        }
      }
      this.delivery += 1;
      this.member = 0;
    }
    return true;
  }
}
