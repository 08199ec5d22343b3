import type { FastifyRequest } from 'fastify';
import { type Kysely, type Selectable, sql } from 'kysely';
import { newId, nowIso } from '../kernel/new-id.js';
import { type BulkWrites, durably, syncedWrites } from '../storage/bulk-writes.js';
import type { AuditLogTable, Tables } from '../storage/tables.js';

export type AuditRow = Selectable<AuditLogTable>;

export interface AuditQuery {
  /** An exact action (`user.suspend`) or a prefix pattern (`user.*`). */
  action?: string | undefined;
  adminUser?: string | undefined;
  resourceType?: string | undefined;
  resourceId?: string | undefined;
  startTime?: string | undefined;
  endTime?: string | undefined;
  order: 'asc' | 'desc';
  limit: number;
  offset: number;
}

export interface AuditEntryInput {
  action: string;
  resourceType: string;
  resourceId?: string | null;
  details?: Record<string, unknown>;
}

/** Writes one audit entry per administrative change: who, what, on which resource, from where. */
export class AuditLog {
  constructor(
    private readonly db: Kysely<Tables>,
    /**
     * How an entry commits. On SQLite (bulkWrites): unsynced, then the WAL synced on libuv's pool before `write`
     * resolves, so the entry is on disk before the request that made it is answered, without the server's
     * thread waiting for the disk (26–70 ms a synced commit while a backup or a purge kept it busy).
     */
    private readonly writes: BulkWrites = syncedWrites(db),
  ) {}

  /** Records an action taken through an HTTP request; the actor and origin come from the request. */
  async record(request: FastifyRequest, entry: AuditEntryInput): Promise<string> {
    return this.write({
      ...entry,
      actorId: request.principal?.userId ?? null,
      adminUser: request.principal?.username ?? 'anonymous',
      ipAddress: request.ip,
      userAgent: String(request.headers['user-agent'] ?? '').slice(0, 512),
    });
  }

  /** Entries matching the filters, newest first by default, with the number of matches. */
  async list(q: AuditQuery): Promise<{ rows: AuditRow[]; total: number }> {
    let base = this.db.selectFrom('audit_log');
    if (q.action?.endsWith('*')) {
      // `user.*` → every action starting `user.`; LIKE wildcards in the prefix are matched literally.
      const prefix = q.action.slice(0, -1).replace(/[\\%_]/g, (c) => `\\${c}`);
      base = base.where('action', 'like', sql<string>`${`${prefix}%`} escape '\\'`);
    } else if (q.action) base = base.where('action', '=', q.action);
    if (q.adminUser) base = base.where('admin_user', '=', q.adminUser);
    if (q.resourceType) base = base.where('resource_type', '=', q.resourceType);
    if (q.resourceId) base = base.where('resource_id', '=', q.resourceId);
    if (q.startTime) base = base.where('timestamp', '>=', q.startTime);
    if (q.endTime) base = base.where('timestamp', '<=', q.endTime);
    const total = await base.select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirst();
    const rows = await base
      .selectAll()
      .orderBy('timestamp', q.order)
      .orderBy('id', q.order)
      .limit(q.limit)
      .offset(q.offset)
      .execute();
    return { rows, total: Number(total?.n ?? 0) };
  }

  /** Records an action taken by the platform itself or the CLI. */
  async write(
    entry: AuditEntryInput & {
      actorId?: string | null;
      adminUser: string;
      ipAddress?: string;
      userAgent?: string;
    },
  ): Promise<string> {
    const id = newId('aud');
    await durably(this.writes, (trx) =>
      trx
        .insertInto('audit_log')
        .values({
          id,
          timestamp: nowIso(),
          admin_user: entry.adminUser,
          actor_id: entry.actorId ?? null,
          action: entry.action,
          resource_type: entry.resourceType,
          resource_id: entry.resourceId ?? null,
          details: JSON.stringify(entry.details ?? {}),
          ip_address: entry.ipAddress ?? '',
          user_agent: entry.userAgent ?? '',
        })
        .execute(),
    );
    return id;
  }
}
