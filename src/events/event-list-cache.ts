import type { LocalCache } from '../cache/local-cache.js';
import { SerializedData } from '../http/plain-json.js';
import { nowIso } from '../kernel/new-id.js';

export interface CachedPage {
  /** The database's change stamp when the page was read. */
  stamp: string;
  /** The page is valid until this ISO time (the next stored event to expire), or for good when null. */
  until: string | null;
  json: string;
}

export interface EventListCacheDeps {
  /** Where pages are kept: the cache service's L1 view of `api_responses` (counted, cleared with it). */
  pages: LocalCache<CachedPage>;
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
 * Keys include the reader's rights (`readerKey`), which decide which events a page holds.
 */
export class EventListCache {
  constructor(private readonly deps: EventListCacheDeps) {}

  /**
   * The page for `key`, built by `build` when missing or stale. Cached, it is a SerializedData standing in
   * for T: only for routes serialized with `plainJson`, which writes its JSON as the body's `data`.
   */
  async page<T>(key: string, build: () => Promise<T>): Promise<T> {
    const stamp = this.deps.stamp();
    if (stamp === undefined) return build();
    const now = nowIso();
    const cached = this.deps.pages.get(key);
    if (cached && cached.stamp === stamp && (cached.until === null || now < cached.until)) {
      return SerializedData.fromJson<T>(cached.json) as unknown as T;
    }
    // Read before the page: an event that expires in between only ends the page early.
    const until = await this.deps.nextExpiry(now);
    const data = SerializedData.of(await build());
    this.deps.pages.set(key, { stamp, until, json: data.json });
    return data as unknown as T;
  }
}
