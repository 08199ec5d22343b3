import type { FastifyRequest } from 'fastify';
import type { Kysely } from 'kysely';
import { newId, nowIso } from '../kernel/new-id.js';
import type { Tables } from '../storage/tables.js';

export interface AuditEntryInput {
  action: string;
  resourceType: string;
  resourceId?: string | null;
  details?: Record<string, unknown>;
}

/** Writes one audit entry per administrative change: who, what, on which resource, from where. */
export class AuditLog {
  constructor(private readonly db: Kysely<Tables>) {}

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
    await this.db
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
      .execute();
    return id;
  }
}
