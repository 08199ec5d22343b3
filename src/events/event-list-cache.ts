import { LRUCache } from 'lru-cache';
import { SerializedData } from '../http/plain-json.js';
import { nowIso } from '../kernel/new-id.js';

interface Page {
  stamp: string;
  /** The page is valid until this ISO time (the next stored event to expire), or for good when null. */
  until: string | null;
  data: SerializedData<unknown>;
}

export interface EventListCacheDeps {
  /** The database's change stamp (`Database.changeStamp`); undefined turns the cache off. */
  stamp: () => string | undefined;
  /** The earliest expiry after `now` among stored events (`EventStore.nextExpiry`). */
  nextExpiry: (now: string) => Promise<string | null>;
}

/**
 * Pages of the event list, kept serialized for as long as the database has not changed and no listed or
 * unlisted event has expired: dashboards and consoles poll the same pages, and rebuilding one reads, decodes
 * and serializes every row again. Any write to the database (an emit, a status move, a purge, a restore)
 * changes the stamp and the next request rebuilds the page, so a cached page is never older than the data.
 * Keys include the reader, whose rights decide which confidential events a page holds.
 */
export class EventListCache {
  private readonly pages = new LRUCache<string, Page>({
    max: 256,
    maxSize: 32 * 1024 * 1024,
    sizeCalculation: (page) => page.data.json.length + 1,
  });
  hits = 0;
  misses = 0;

  constructor(private readonly deps: EventListCacheDeps) {}

  /**
   * The page for `key`, built by `build` when missing or stale. Cached, it is a SerializedData standing in
   * for T: only for routes serialized with `plainJson`, which writes its JSON as the body's `data`.
   */
  async page<T>(key: string, build: () => Promise<T>): Promise<T> {
    const stamp = this.deps.stamp();
    if (stamp === undefined) return build();
    const now = nowIso();
    const cached = this.pages.get(key);
    if (cached && cached.stamp === stamp && (cached.until === null || now < cached.until)) {
      this.hits += 1;
      return cached.data as unknown as T;
    }
    this.misses += 1;
    // Read before the page: an event that expires in between only ends the page early.
    const until = await this.deps.nextExpiry(now);
    const data = new SerializedData(await build());
    this.pages.set(key, { stamp, until, data });
    return data as unknown as T;
  }

  clear(): void {
    this.pages.clear();
  }
}
