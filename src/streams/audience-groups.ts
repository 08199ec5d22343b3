import { PatternIndex } from '../events/pattern-index.js';
import type { StreamConnection } from './stream-connection.js';

export interface AudienceGroup {
  readonly key: string;
  readonly members: Set<StreamConnection>;
  /** Any member: every member accepts exactly the events it accepts. */
  sample: StreamConnection;
}

/**
 * The live connections grouped by what they select — patterns, filters and reader (`audienceKey`) — and
 * indexed by their patterns' first segment. Whether an event matches is worked out once per group, however
 * many clients share the selection (a dashboard opened a thousand times is one check, not a thousand).
 */
export class AudienceGroups {
  private readonly byKey = new Map<string, AudienceGroup>();
  private readonly groupOf = new Map<StreamConnection, AudienceGroup>();
  private readonly index = new PatternIndex<AudienceGroup>();

  /** Files a connection under its current selection; one that selects nothing is in no group. */
  place(connection: StreamConnection): void {
    const key = connection.patterns.length > 0 ? connection.audienceKey : undefined;
    const current = this.groupOf.get(connection);
    if (current?.key === key) return;
    if (current) this.leave(connection, current);
    if (key === undefined) return;
    let group = this.byKey.get(key);
    if (!group) {
      group = { key, members: new Set(), sample: connection };
      this.byKey.set(key, group);
      this.index.add(group, connection.patterns);
    }
    group.members.add(connection);
    this.groupOf.set(connection, group);
  }

  remove(connection: StreamConnection): void {
    const group = this.groupOf.get(connection);
    if (group) this.leave(connection, group);
  }

  /** The groups whose patterns may match an event of this type. */
  candidates(eventType: string): Set<AudienceGroup> {
    return this.index.candidates(eventType);
  }

  private leave(connection: StreamConnection, group: AudienceGroup): void {
    group.members.delete(connection);
    this.groupOf.delete(connection);
    if (group.members.size === 0) {
      this.byKey.delete(group.key);
      this.index.remove(group);
    } else if (group.sample === connection) {
      group.sample = group.members.values().next().value!;
    }
  }
}
