import { firstSegmentOf } from './pattern-matcher.js';

/**
 * Finds the entries whose patterns can match an event type without scanning every pattern: entries are
 * indexed by the literal first segment of each pattern; entries with a leading wildcard are always candidates.
 * Callers still run the entry's compiled matcher on each candidate.
 */
export class PatternIndex<T> {
  private readonly byFirst = new Map<string, Set<T>>();
  private readonly wildcard = new Set<T>();
  private readonly keys = new Map<T, (string | undefined)[]>();

  add(entry: T, patterns: readonly string[]): void {
    this.remove(entry);
    const firsts = [...new Set(patterns.map(firstSegmentOf))];
    this.keys.set(entry, firsts);
    for (const first of firsts) {
      if (first === undefined) {
        this.wildcard.add(entry);
        continue;
      }
      let set = this.byFirst.get(first);
      if (!set) {
        set = new Set();
        this.byFirst.set(first, set);
      }
      set.add(entry);
    }
  }

  remove(entry: T): void {
    const firsts = this.keys.get(entry);
    if (!firsts) return;
    this.keys.delete(entry);
    for (const first of firsts) {
      if (first === undefined) {
        this.wildcard.delete(entry);
        continue;
      }
      const set = this.byFirst.get(first);
      set?.delete(entry);
      if (set?.size === 0) this.byFirst.delete(first);
    }
  }

  /** Entries that may match `eventType`, each once. */
  candidates(eventType: string): Set<T> {
    const dot = eventType.indexOf('.');
    const first = dot === -1 ? eventType : eventType.slice(0, dot);
    const exact = this.byFirst.get(first);
    if (!exact || exact.size === 0) return this.wildcard;
    if (this.wildcard.size === 0) return exact;
    return new Set([...exact, ...this.wildcard]);
  }

  get size(): number {
    return this.keys.size;
  }
}
