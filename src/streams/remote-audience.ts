import { randomUUID } from 'node:crypto';
import type { SharedState } from '../cluster/shared-state.js';
import { type EventReader, mayRead, PLATFORM_EVENT_FAMILIES } from '../events/event-data.js';
import { type CompiledSelector, compileSelector } from '../events/event-filters.js';
import type { EventsTable } from '../events/event-tables.js';

/** What one or more identical live clients of an instance select, and who they read as. */
export interface AudienceSpec {
  patterns: string[];
  source?: string[] | undefined;
  priority?: { min?: number | undefined; max?: number | undefined } | undefined;
  /** The clients' rights, reduced to what `mayRead` reads (`announcedReader`). */
  reader: EventReader;
  count: number;
}

interface Announcement {
  origin: string;
  specs: AudienceSpec[];
  /** Sent by an instance that has just started: the others announce themselves at once. */
  hello?: boolean;
}

interface Remote {
  selectors: { selector: CompiledSelector; reader: AudienceSpec['reader']; count: number }[];
  seenAt: number;
}

type Facts = Pick<EventsTable, 'event_type' | 'source' | 'priority' | 'security_level' | 'emitter_id'>;

const CHANNEL = 'streams:audience';
const DEBOUNCE_MS = 100;
const HEARTBEAT_MS = 10_000;
// An instance not heard from for this long is gone (it re-announces every HEARTBEAT_MS while alive).
const EXPIRY_MS = 3 * HEARTBEAT_MS;

/**
 * The live stream clients of the other instances, for `subscriber_count`: each instance announces what its
 * clients select (patterns, filters, the reader's rights; identical clients counted together) on the shared
 * pub/sub when they change and every ten seconds, and counts the announcements of the others against each
 * event it emits. Only in cluster mode; an instance that stops announcing is dropped after thirty seconds.
 */
export class RemoteAudience {
  private readonly origin = randomUUID();
  private readonly remotes = new Map<string, Remote>();
  private unsubscribe: (() => void) | undefined;
  private heartbeat: NodeJS.Timeout | undefined;
  private pending: NodeJS.Timeout | undefined;

  constructor(
    private readonly shared: SharedState,
    private readonly localSpecs: () => AudienceSpec[],
    private readonly onError: (err: unknown) => void,
  ) {}

  start(): void {
    this.unsubscribe = this.shared.subscribe(CHANNEL, (message) => this.receive(message as Announcement));
    this.announce(true);
    this.heartbeat = setInterval(() => this.announce(false), HEARTBEAT_MS);
    this.heartbeat.unref();
  }

  stop(): void {
    this.unsubscribe?.();
    for (const t of [this.heartbeat, this.pending]) if (t) clearTimeout(t);
    this.heartbeat = this.pending = undefined;
    // The others forget this instance's clients now rather than at expiry.
    this.shared.publish(CHANNEL, { origin: this.origin, specs: [] }).catch(this.onError);
    this.remotes.clear();
  }

  /** The local clients changed: announced once the changes of the next moment are in. */
  changed(): void {
    if (this.heartbeat === undefined || this.pending !== undefined) return;
    this.pending = setTimeout(() => {
      this.pending = undefined;
      this.announce(false);
    }, DEBOUNCE_MS);
    this.pending.unref();
  }

  /** The other instances' live clients that would receive an event with these facts. */
  count(event: Facts, data: () => unknown): number {
    let n = 0;
    const now = Date.now();
    for (const [origin, remote] of this.remotes) {
      if (now - remote.seenAt > EXPIRY_MS) {
        this.remotes.delete(origin);
        continue;
      }
      for (const { selector, reader, count } of remote.selectors) {
        if (mayRead(event, reader) && selector.matches(event, data)) n += count;
      }
    }
    return n;
  }

  private announce(hello: boolean): void {
    const message: Announcement = {
      origin: this.origin,
      specs: this.localSpecs(),
      ...(hello ? { hello } : {}),
    };
    this.shared.publish(CHANNEL, message).catch(this.onError);
  }

  private receive(message: Announcement): void {
    if (!message || message.origin === this.origin || !Array.isArray(message.specs)) return;
    if (message.specs.length === 0) this.remotes.delete(message.origin);
    else {
      this.remotes.set(message.origin, {
        seenAt: Date.now(),
        selectors: message.specs.map((s) => ({
          selector: compileSelector({ patterns: s.patterns, source: s.source, priority: s.priority }),
          // An instance of an earlier version announces no permissions: its admins read every family.
          reader: { ...s.reader, permissions: s.reader.permissions ?? (s.reader.isAdmin ? ['*'] : []) },
          count: s.count,
        })),
      });
    }
    if (message.hello) this.changed();
  }
}

/** Counts identical specs together (same selection and rights), so an announcement stays small. */
export function groupSpecs(specs: Iterable<Omit<AudienceSpec, 'count'>>): AudienceSpec[] {
  const groups = new Map<string, AudienceSpec>();
  for (const spec of specs) {
    const reader = announcedReader(spec.reader);
    const key = JSON.stringify([spec.patterns, spec.source, spec.priority, reader]);
    const group = groups.get(key);
    if (group) group.count += 1;
    else groups.set(key, { ...spec, reader, count: 1 });
  }
  return [...groups.values()];
}

/**
 * A reader as announced to the other instances: only what `mayRead` reads — the user (not for admins, who read
 * every confidential event) and the permissions that guard a family of platform events.
 */
function announcedReader(reader: EventReader): EventReader {
  const guarding = new Set(PLATFORM_EVENT_FAMILIES.map((f) => f.permission as string));
  const permissions = reader.permissions.includes('*')
    ? ['*']
    : [...new Set(reader.permissions)].filter((p) => guarding.has(p)).sort();
  return { userId: reader.isAdmin ? '' : reader.userId, isAdmin: reader.isAdmin, permissions };
}
