import { Type } from '@sinclair/typebox';
import type { AuditLog } from '../audit/audit-log.js';
import { access } from '../http/access.js';
import { AppError } from '../http/app-error.js';
import type { App } from '../http/app-type.js';
import {
  done,
  Envelope,
  MessageOnly,
  ok,
  PageQuery,
  Pagination,
  pagination,
  Timestamp,
} from '../http/envelope.js';
import { type EventOrigin, type PlatformEvents, requestOrigin } from '../kernel/platform-events.js';
import type { NewAlert } from './alert-store.js';
import { type BlockedIpRow, type BlockedIps, parseRangeInput } from './blocked-ips.js';
import { buildBlockList, displayRange, matches, parseCidr } from './ip-ranges.js';

const tags = ['admin', 'security'];

const BlockedIpView = Type.Object({
  id: Type.String(),
  ip_address: Type.String({ description: 'The address, or the range in CIDR notation' }),
  cidr: Type.String({ description: 'Always in CIDR notation (`203.0.113.7/32`)' }),
  reason: Type.String(),
  blocked_by: Type.String(),
  created_at: Timestamp,
  expires_at: Type.Union([Timestamp, Type.Null()], { description: 'null: blocked until removed' }),
});

const BlockIpBody = Type.Object(
  {
    ip_address: Type.String({
      minLength: 1,
      maxLength: 64,
      description: 'An IPv4 or IPv6 address, or a CIDR range (`203.0.113.0/24`)',
    }),
    reason: Type.Optional(Type.String({ maxLength: 500, default: '' })),
    duration_hours: Type.Optional(
      Type.Integer({ minimum: 0, maximum: 87_600, default: 0, description: '0 blocks until removed' }),
    ),
    notify_admins: Type.Optional(Type.Boolean({ default: false })),
    force: Type.Optional(
      Type.Boolean({
        default: false,
        description: "Needed to block a range holding the caller's own address",
      }),
    ),
  },
  {
    additionalProperties: false,
    examples: [{ ip_address: '203.0.113.7', reason: 'credential stuffing', duration_hours: 24 }],
  },
);

function view(row: BlockedIpRow) {
  const range = parseCidr(row.cidr);
  return {
    id: row.id,
    ip_address: range ? displayRange(range) : row.cidr,
    cidr: row.cidr,
    reason: row.reason,
    blocked_by: row.created_by,
    created_at: row.created_at,
    expires_at: row.expires_at,
  };
}

/** `/api/v1/admin/security/block-ip` and `/blocked-ips` (decisions §6): blocking addresses and ranges. */
export function registerBlockedIpRoutes(
  app: App,
  deps: {
    blockedIps: BlockedIps;
    audit: AuditLog;
    events: PlatformEvents;
    /** Where `notify_admins: true` raises its alert (the security module's alerts). */
    alerts?: { raise(alert: NewAlert, origin?: EventOrigin): Promise<unknown> } | undefined;
  },
): void {
  app.post(
    '/api/v1/admin/security/block-ip',
    {
      config: { access: access.admin('admin:security') },
      schema: {
        operationId: 'adminBlockIp',
        tags,
        summary: 'Block an address or CIDR range; its requests get 403 before any other work',
        description:
          'Blocking a range that holds the caller’s own address needs `force: true` (else 409 RESOURCE_CONFLICT). ' +
          'Blocking a range that is already blocked replaces its reason and expiry (200).',
        body: BlockIpBody,
        response: {
          200: Envelope(Type.Object({ blocked_ip: BlockedIpView })),
          201: Envelope(Type.Object({ blocked_ip: BlockedIpView })),
          409: { $ref: 'ErrorEnvelope#' },
        },
      },
    },
    async (request, reply) => {
      const body = request.body;
      const principal = request.principal!;
      const range = parseRangeInput(body.ip_address);
      if (!body.force && matches(buildBlockList([range.cidr]), request.ip)) {
        throw new AppError(
          'RESOURCE_CONFLICT',
          'The range holds your own address; send force: true to block it',
          {
            details: { field: 'ip_address', reason: 'contains the caller address', caller_ip: request.ip },
          },
        );
      }
      const { row, created } = await deps.blockedIps.block({
        range,
        reason: body.reason ?? '',
        durationHours: body.duration_hours ?? 0,
        actor: principal.username,
      });
      const shown = view(row);
      await deps.audit.record(request, {
        action: 'security.block_ip',
        resourceType: 'ip_address',
        resourceId: row.cidr,
        details: {
          ip_address: shown.ip_address,
          reason: row.reason,
          duration_hours: body.duration_hours ?? 0,
          expires_at: row.expires_at,
          notify_admins: body.notify_admins ?? false,
          forced: body.force ?? false,
        },
      });
      deps.events.announce(
        'security.ip_blocked',
        'system',
        {
          ip_address: shown.ip_address,
          cidr: row.cidr,
          reason: row.reason,
          expires_at: row.expires_at,
          blocked_by: principal.username,
          notify_admins: body.notify_admins ?? false,
        },
        { actor: { id: principal.userId, username: principal.username }, origin: requestOrigin(request) },
      );
      if (body.notify_admins && deps.alerts) {
        // An alert is how admins are told: it is listed under security alerts and announced as security.alert.
        await deps.alerts.raise(
          {
            type: 'ip_blocked',
            severity: 'medium',
            title: `${shown.ip_address} was blocked by ${principal.username}`,
            description: row.reason || 'No reason given',
            affectedResources: [`ip:${shown.ip_address}`],
            metadata: { cidr: row.cidr, expires_at: row.expires_at, blocked_by: principal.username },
            dedupeKey: `ip_blocked:${row.cidr}`,
          },
          requestOrigin(request),
        );
      }
      return reply.code(created ? 201 : 200).send(ok(request, { blocked_ip: shown }));
    },
  );

  app.get(
    '/api/v1/admin/security/blocked-ips',
    {
      config: { access: access.admin('admin:security') },
      schema: {
        operationId: 'adminListBlockedIps',
        tags,
        summary: 'The blocks in force now, newest first',
        querystring: Type.Object(PageQuery, { additionalProperties: false }),
        response: {
          200: Envelope(Type.Object({ blocked_ips: Type.Array(BlockedIpView), pagination: Pagination })),
        },
      },
    },
    async (request) => {
      const page = request.query.page ?? 1;
      const perPage = request.query.per_page ?? 20;
      const all = deps.blockedIps.entries();
      const slice = all.slice((page - 1) * perPage, page * perPage);
      return ok(request, { blocked_ips: slice.map(view), pagination: pagination(page, perPage, all.length) });
    },
  );

  app.delete(
    '/api/v1/admin/security/blocked-ips/:ip',
    {
      config: { access: access.admin('admin:security') },
      schema: {
        operationId: 'adminUnblockIp',
        tags,
        summary: 'Remove the block of an address or range (URL-encode the slash of a range: `10.0.0.0%2F24`)',
        params: Type.Object({ ip: Type.String({ minLength: 1, maxLength: 64 }) }),
        response: { 200: MessageOnly, 404: { $ref: 'ErrorEnvelope#' } },
      },
    },
    async (request) => {
      const range = parseRangeInput(request.params.ip, 'ip');
      if (!(await deps.blockedIps.unblock(range))) {
        throw new AppError('RESOURCE_NOT_FOUND', `No block for ${displayRange(range)}`, {
          details: { resource: 'blocked_ip', id: displayRange(range) },
        });
      }
      await deps.audit.record(request, {
        action: 'security.unblock_ip',
        resourceType: 'ip_address',
        resourceId: range.cidr,
        details: { ip_address: displayRange(range) },
      });
      return done(request, `${displayRange(range)} is no longer blocked`);
    },
  );
}
