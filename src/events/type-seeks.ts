import { sql } from 'kysely';
import type { Dialect } from '../storage/database.js';
import { literalPrefixOf } from './pattern-matcher.js';

/**
 * The distinct stored event types, found by skipping through the type index (`events_list_type`) from one type
 * to the next: a seek per type, never a read of every event, so its cost follows the number of types, not of
 * events or hours. With a pattern on SQLite, whose text order is the bytes', the seeks stay within the pattern's
 * literal prefix: `shop5.**` reads from `shop5` up to `shop5/` ('/' follows '.'). PostgreSQL orders text by the
 * database's collation, where such a range may not hold every `shop5.` type: it seeks through all. The caller
 * still tests each type on its patterns.
 */
export function typeSeeks(dialect: Dialect, pattern?: string) {
  const prefix = dialect === 'sqlite' && pattern !== undefined ? literalPrefixOf(pattern) : undefined;
  const low = prefix ?? '';
  const inRange = prefix === undefined ? sql`` : sql` and e.event_type < ${`${prefix}/`}`;
  return sql<{ event_type: string }>`
    with recursive found(event_type) as (
      select (select min(e.event_type) from events e where e.event_type >= ${low}${inRange})
      union all
      select (select min(e.event_type) from events e where e.event_type > found.event_type${inRange})
      from found where found.event_type is not null
    )
    select event_type from found where event_type is not null`;
}
