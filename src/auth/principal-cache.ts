/** A small TTL cache for per-request lookups (sessions, users, API keys), cleared on change announcements. */
export class TtlCache<V> {
  private readonly map = new Map<string, { value: V; until: number }>();

  constructor(
    private readonly ttlMs: number,
    private readonly maxEntries = 50_000,
  ) {}

  get(key: string): V | undefined {
    const hit = this.map.get(key);
    if (!hit) return undefined;
    if (hit.until < Date.now()) {
      this.map.delete(key);
      return undefined;
    }
    return hit.value;
  }

  set(key: string, value: V): void {
    if (this.map.size >= this.maxEntries) this.map.delete(this.map.keys().next().value as string);
    this.map.set(key, { value, until: Date.now() + this.ttlMs });
  }

  delete(key: string): void {
    this.map.delete(key);
  }

  deleteWhere(test: (value: V) => boolean): void {
    for (const [k, v] of this.map) if (test(v.value)) this.map.delete(k);
  }

  clear(): void {
    this.map.clear();
  }
}
