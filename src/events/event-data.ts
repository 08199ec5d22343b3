import type { ExpressionBuilder, ExpressionWrapper, SqlBool } from 'kysely';
import { sql } from 'kysely';
import { type Permission, permissionsOf } from '../auth/roles.js';
import type { Tables } from '../storage/tables.js';
import type { EventCipher } from './event-cipher.js';
import type { EventsTable } from './event-tables.js';

/** The `data` object of a stored event, decrypted when it is kept encrypted at rest. */
export function decodeEventData(
  row: Pick<EventsTable, 'data' | 'data_encrypted'>,
  cipher: EventCipher,
): Record<string, unknown> {
  const text = row.data_encrypted === 1 ? cipher.open(row.data) : row.data;
  return JSON.parse(text) as Record<string, unknown>;
}

/**
 * Who reads events: a request's principal (its permissions are an API key's narrowed scopes), a stream's
 * client, or the owner of a durable subscription.
 */
export interface EventReader {
  userId: string;
  isAdmin: boolean;
  /** Effective permissions (an API key's are its scopes); `*` grants every one. */
  permissions: readonly string[];
}

/** The facts of an event the rule reads. */
export type ReadFacts = Pick<EventsTable, 'event_type' | 'source' | 'security_level' | 'emitter_id'>;

/**
 * A family of the platform's own events and the permission that guards the same data elsewhere in the API.
 * A type belongs to the first family that holds it: a namespace holds itself and every type under it
 * (`system` holds `system.restart`), `types` hold exactly those.
 */
export interface PlatformEventFamily {
  /** As the docs name it. */
  readonly name: string;
  readonly namespace?: string;
  readonly types?: readonly string[];
  readonly permission: Permission;
  /** The route whose guard this is. */
  readonly guards: string;
}

/**
 * Who may read each family of the platform's events (docs/events.md, "Who may read which events"). The same
 * types are reserved for the platform: neither `POST /api/v1/events` nor a plugin may emit them.
 */
export const PLATFORM_EVENT_FAMILIES: readonly PlatformEventFamily[] = [
  { name: 'auth.**', namespace: 'auth', permission: 'admin:security', guards: 'GET /api/v1/admin/audit-log' },
  {
    name: 'security.**',
    namespace: 'security',
    permission: 'admin:security',
    guards: 'GET /api/v1/admin/security/alerts',
  },
  {
    name: 'user.created, user.updated, user.suspended, user.deleted',
    types: ['user.created', 'user.updated', 'user.suspended', 'user.deleted'],
    permission: 'read:users',
    guards: 'GET /api/v1/users',
  },
  {
    name: 'system.config.**',
    namespace: 'system.config',
    permission: 'admin:config',
    guards: 'GET /api/v1/config',
  },
  {
    name: 'system.**',
    namespace: 'system',
    permission: 'admin:system',
    guards: 'GET /api/v1/admin/system/*',
  },
  {
    name: 'plugin.**',
    namespace: 'plugin',
    permission: 'admin:plugins',
    guards: 'GET /api/v1/admin/plugins',
  },
  { name: 'backup.**', namespace: 'backup', permission: 'admin:backup', guards: 'GET /api/v1/backup' },
  { name: 'task.**', namespace: 'task', permission: 'read:system', guards: 'GET /api/v1/tasks' },
  {
    // Names other users' subscriptions, which only admins list; the owner is told by e-mail.
    name: 'webhook.subscription.disabled',
    types: ['webhook.subscription.disabled'],
    permission: 'admin:system',
    guards: "GET /api/v1/events/subscriptions (every user's)",
  },
];

const holds = (family: PlatformEventFamily, type: string): boolean =>
  family.namespace !== undefined
    ? type === family.namespace || type.startsWith(`${family.namespace}.`)
    : family.types!.includes(type);

/** The family of the platform's events a type belongs to, or undefined for any other type. */
export function platformFamilyOf(eventType: string): PlatformEventFamily | undefined {
  return PLATFORM_EVENT_FAMILIES.find((f) => holds(f, eventType));
}

/** Whether the reader holds `permission` (an API key: among its scopes). */
export const holdsPermission = (reader: EventReader, permission: string): boolean =>
  reader.permissions.includes('*') || reader.permissions.includes(permission);

/**
 * Who may read an event — the one rule of every read: lists, detail, audit trail, stats, streams and their
 * resume points, subscriptions and their deliveries, replays.
 * - `confidential`: admins and its emitter only.
 * - an event of a platform family (`auth.*`, `security.*`, …): whoever holds the family's permission.
 * - anything else: every reader.
 */
export function mayRead(row: ReadFacts, reader: EventReader): boolean {
  if (row.security_level === 'confidential' && !reader.isAdmin && row.emitter_id !== reader.userId)
    return false;
  const family = platformFamilyOf(row.event_type);
  return family === undefined || holdsPermission(reader, family.permission);
}

/** Whether every reader may read the event: neither confidential nor of a guarded platform family. */
export function openToAll(row: Pick<ReadFacts, 'event_type' | 'security_level'>): boolean {
  return row.security_level !== 'confidential' && platformFamilyOf(row.event_type) === undefined;
}

/** The families a reader may not read. */
export function hiddenFamilies(reader: EventReader): PlatformEventFamily[] {
  return PLATFORM_EVENT_FAMILIES.filter((f) => !holdsPermission(reader, f.permission));
}

/**
 * What decides which events a reader sees, as a string: readers with equal keys see the same events (a list
 * page, a stream group, an announced audience may be shared between them).
 */
export function readerKey(reader: EventReader): string {
  const hidden = hiddenFamilies(reader).map((f) => f.name);
  return JSON.stringify([reader.isAdmin ? '' : reader.userId, reader.isAdmin, hidden]);
}

/**
 * The reader a durable subscription receives as: its owner with the permissions of the owner's roles now
 * (`owner_roles`, the JSON of `users.roles`; null for an owner that no longer exists, who may read nothing
 * guarded), narrowed to the scopes of the API key that created it (`reader_scopes`, JSON; null for none). A plugin's subscription (owner `plugin:<id>`) was approved with the plugin by an admin and
 * is not any user's: it receives every family, and confidential events only as any non-admin does.
 */
export function subscriptionReader(
  ownerId: string,
  ownerRoles: string | null,
  readerScopes: string | null,
): EventReader {
  if (ownerId.startsWith('plugin:')) return { userId: ownerId, isAdmin: false, permissions: ['*'] };
  const roles = ownerRoles ? (JSON.parse(ownerRoles) as string[]) : [];
  const held = permissionsOf(roles);
  const scopes = readerScopes === null ? undefined : (JSON.parse(readerScopes) as string[]);
  const permissions =
    scopes === undefined || scopes.includes('*')
      ? held
      : held.includes('*')
        ? scopes
        : held.filter((p) => scopes.includes(p));
  return { userId: ownerId, isAdmin: roles.includes('admin'), permissions };
}

/** The SQL form of `mayRead` for queries of the events table, built from the same families. */
export function readableBy(
  eb: ExpressionBuilder<Tables, 'events'>,
  reader: EventReader,
): ExpressionWrapper<Tables, 'events', SqlBool> | undefined {
  const all: ExpressionWrapper<Tables, 'events', SqlBool>[] = [];
  if (!reader.isAdmin) {
    all.push(eb.or([eb('security_level', '!=', 'confidential'), eb('emitter_id', '=', reader.userId)]));
  }
  for (const family of hiddenFamilies(reader)) {
    // A type belongs to the first family that holds it: a hidden one is left out unless an earlier one holds it.
    const earlier = PLATFORM_EVENT_FAMILIES.slice(0, PLATFORM_EVENT_FAMILIES.indexOf(family));
    const inFamily = familySql(eb, family);
    const claimed = earlier.map((f) => familySql(eb, f));
    all.push(claimed.length === 0 ? eb.not(inFamily) : eb.or([eb.not(inFamily), ...claimed]));
  }
  return all.length === 0 ? undefined : eb.and(all);
}

/** A family's types in SQL, case-sensitive on both dialects (a `LIKE` is not on SQLite). */
function familySql(
  eb: ExpressionBuilder<Tables, 'events'>,
  family: PlatformEventFamily,
): ExpressionWrapper<Tables, 'events', SqlBool> {
  if (family.namespace === undefined) return eb('event_type', 'in', [...family.types!]);
  const prefix = `${family.namespace}.`;
  return eb.or([
    eb('event_type', '=', family.namespace),
    eb(sql<string>`substr(${sql.ref('event_type')}, 1, ${sql.lit(prefix.length)})`, '=', prefix),
  ]);
}

/** Sources only the platform emits with: `system`, `auth`, `plugin:<id>` (any case, spaces around ignored). */
export function isPlatformSource(source: string): boolean {
  const s = source.trim().toLowerCase();
  return s === 'system' || s === 'auth' || s.startsWith('plugin:');
}

/** Types only the platform emits: those of its families, in any case. */
export function isPlatformType(eventType: string): boolean {
  return platformFamilyOf(eventType.toLowerCase()) !== undefined;
}
