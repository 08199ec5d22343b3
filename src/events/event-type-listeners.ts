import type { Kysely } from 'kysely';
import type { Tables } from '../storage/tables.js';
import { type EventReader, holdsPermission } from './event-data.js';
import { compilePatterns, type TypeMatcher } from './pattern-matcher.js';

export interface TypeListeners {
  subscriptions: { subscription_id: string; name: string; status: string }[];
  plugins: string[];
}

interface Listener {
  id: string;
  name: string;
  status: string;
  pluginId: string | null;
  matches: TypeMatcher;
}

/**
 * Who listens to event types: the webhook subscriptions the reader may see (their own; an admin's, every one)
 * and the plugins with a subscription, matched by their patterns. Read through `reads`: the number of
 * subscriptions grows with the users, and a read on SQLite's server thread would hold up every request.
 */
export class EventTypeListeners {
  constructor(private readonly reads: Kysely<Tables>) {}

  /** Returns a lookup from a type to its listeners, for one listing. */
  async forReader(reader: EventReader): Promise<(eventType: string) => TypeListeners> {
    let q = this.reads
      .selectFrom('subscriptions')
      .select(['id', 'name', 'status', 'event_patterns', 'delivery_method', 'plugin_id', 'owner_id'])
      .orderBy('created_at')
      .orderBy('id');
    // Plugins are named only to those who may read the plugin list (`read:plugins`, as GET /api/v1/plugins).
    const plugins = holdsPermission(reader, 'read:plugins');
    if (!reader.isAdmin) {
      q = q.where((eb) =>
        plugins
          ? eb.or([eb('owner_id', '=', reader.userId), eb('delivery_method', '=', 'plugin')])
          : eb.and([eb('owner_id', '=', reader.userId), eb('delivery_method', '!=', 'plugin')]),
      );
    } else if (!plugins) {
      q = q.where('delivery_method', '!=', 'plugin');
    }
    const listeners: Listener[] = (await q.execute()).map((r) => ({
      id: r.id,
      name: r.name,
      status: r.status,
      pluginId: r.delivery_method === 'plugin' ? r.plugin_id : null,
      matches: compilePatterns(JSON.parse(r.event_patterns) as string[]),
    }));
    return (eventType) => {
      const out: TypeListeners = { subscriptions: [], plugins: [] };
      for (const l of listeners) {
        if (!l.matches(eventType)) continue;
        if (l.pluginId === null)
          out.subscriptions.push({ subscription_id: l.id, name: l.name, status: l.status });
        else if (!out.plugins.includes(l.pluginId)) out.plugins.push(l.pluginId);
      }
      return out;
    };
  }
}
