import { createReadStream } from 'node:fs';
import { Type } from '@sinclair/typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { access } from '../http/access.js';
import { AppError } from '../http/app-error.js';
import type { App } from '../http/app-type.js';
import { Envelope, ok } from '../http/envelope.js';
import { requestOrigin } from '../kernel/platform-events.js';
import type { Component } from './backup-manifest.js';
import {
  AdminBackupView,
  AdminCreateBackupBody,
  AdminRestoreBody,
  ArchiveFile,
  BackupIdParams,
  Busy,
  CoreCreatedView,
  CoreListItem,
  CreateBackupBody,
  NotFound,
  Refused,
  RestoreBody,
  RestoreStartedView,
} from './backup-schemas.js';
import { type BackupOrigin, type BackupService, FULL, type RestoreStarted } from './backup-service.js';
import {
  adminBackupView,
  coreCreatedView,
  coreListItem,
  type Surface,
  toComponents,
} from './backup-views.js';

const originOf = (request: FastifyRequest): BackupOrigin => ({
  userId: request.principal?.userId ?? null,
  username: request.principal?.username ?? 'anonymous',
  request: requestOrigin(request),
});

const confirmRequired = (field: string) =>
  new AppError('VALIDATION_ERROR', `A restore replaces current data; set ${field} to true to go ahead`, {
    details: { field, reason: 'must be true to restore' },
  });

function restoreView(surface: Surface, started: RestoreStarted) {
  return {
    ...started,
    components: started.components.map((c) => (surface === 'admin' && c === 'configuration' ? 'config' : c)),
    task_url: `/api/v1/tasks/${started.restore_id}`,
  };
}

/** Core (`/api/v1/backup`, permission admin:backup) and admin (`/api/v1/admin/backup`) paths over one service. */
export function registerBackupRoutes(app: App, deps: { backups: BackupService }): void {
  const { backups } = deps;
  const core = { access: access.permission('admin:backup') };
  const admin = { access: access.admin('admin:backup') };
  const tags = ['backups'];
  const adminTags = ['admin', 'backups'];

  const sendArchive = async (id: string, reply: FastifyReply) => {
    const { file, bytes, contentType, row } = await backups.download(id);
    reply
      .header('content-type', contentType)
      .header('content-length', String(bytes))
      .header('content-disposition', `attachment; filename="${row.file_name}"`)
      .header('x-backup-sha256', row.sha256);
    return reply.send(createReadStream(file));
  };

  app.post(
    '/api/v1/backup',
    {
      config: { ...core, idempotent: true },
      schema: {
        operationId: 'createBackup',
        tags,
        summary:
          'Start a backup (configuration, database, plugins); the archive is written in the background',
        description:
          'Answers at once with the backup (`status: created`, listed as `running`); a `backup` task whose id ' +
          'is the backup id writes the archive, and the backup becomes `completed` or `failed`.',
        body: CreateBackupBody,
        response: { 201: Envelope(CoreCreatedView), ...Busy, ...Refused },
      },
    },
    async (request, reply) => {
      const body = request.body ?? {};
      const row = await backups.create(
        {
          name: body.name,
          includes: body.include ? toComponents(body.include) : FULL,
          compression: body.compression ?? true,
          encryption: body.encryption ?? false,
        },
        originOf(request),
      );
      return reply.code(201).send(ok(request, coreCreatedView(row)));
    },
  );

  app.get(
    '/api/v1/backup',
    {
      config: core,
      schema: {
        operationId: 'listBackups',
        tags,
        summary: 'Backups, newest first',
        response: { 200: Envelope(Type.Object({ backups: Type.Array(CoreListItem) })) },
      },
    },
    async (request) => ok(request, { backups: (await backups.list()).map(coreListItem) }),
  );

  app.post(
    '/api/v1/backup/:backup_id/restore',
    {
      config: core,
      schema: {
        operationId: 'restoreBackup',
        tags,
        summary: 'Verify a backup, then restore it as a task under maintenance mode',
        params: BackupIdParams,
        body: RestoreBody,
        response: { 202: Envelope(RestoreStartedView), ...NotFound, ...Busy, ...Refused },
      },
    },
    async (request, reply) => {
      const body = request.body ?? {};
      if (body.confirm !== true) throw confirmRequired('confirm');
      const started = await backups.startRestore(
        request.params.backup_id,
        {
          components: body.components ? toComponents(body.components) : undefined,
          safetyBackup: body.create_backup_before_restore ?? true,
        },
        originOf(request),
      );
      return reply.code(202).send(ok(request, restoreView('core', started)));
    },
  );

  app.get(
    '/api/v1/backup/:backup_id/download',
    {
      config: core,
      schema: {
        operationId: 'downloadBackup',
        tags,
        summary: 'The archive file, streamed (not enveloped); 409 until the backup is completed',
        params: BackupIdParams,
        response: { 200: ArchiveFile, ...NotFound, ...Busy, ...Refused },
      },
    },
    async (request, reply) => sendArchive(request.params.backup_id, reply),
  );

  app.post(
    '/api/v1/admin/backup',
    {
      config: { ...admin, idempotent: true },
      schema: {
        operationId: 'adminCreateBackup',
        tags: adminTags,
        summary: 'Start a backup, choosing its components and name; the archive is written in the background',
        description:
          'Answers at once with the backup (`status: created`, listed as `running`); a `backup` task whose id ' +
          'is the backup id writes the archive, and the backup becomes `completed` or `failed`.',
        body: AdminCreateBackupBody,
        response: {
          201: Envelope(
            Type.Object({
              backup_id: Type.String({ description: 'The same as backup.id, named as on the core path' }),
              backup: AdminBackupView,
            }),
          ),
          ...Busy,
          ...Refused,
        },
      },
    },
    async (request, reply) => {
      const body = request.body ?? {};
      // The core path's list, when given, decides alone (the flags have defaults, so they are always present).
      const includes: Component[] = body.include ? toComponents(body.include) : [];
      if (body.include === undefined) {
        if (body.include_config ?? true) includes.push('configuration');
        if (body.include_database ?? true) includes.push('database');
        if (body.include_plugins ?? true) includes.push('plugins');
        if (body.include_logs ?? false) includes.push('logs');
      }
      if (includes.length === 0) {
        throw new AppError('VALIDATION_ERROR', 'A backup must include at least one component', {
          details: { field: 'include_database', reason: 'every include_* flag is false' },
        });
      }
      const row = await backups.create(
        {
          name: body.name,
          includes,
          compression: body.compression ?? true,
          encryption: body.encryption ?? false,
        },
        originOf(request),
      );
      return reply.code(201).send(ok(request, { backup_id: row.id, backup: adminBackupView(row, true) }));
    },
  );

  app.get(
    '/api/v1/admin/backup',
    {
      config: admin,
      schema: {
        operationId: 'adminListBackups',
        tags: adminTags,
        summary: 'Backups, newest first, with their catalogue details',
        response: { 200: Envelope(Type.Object({ backups: Type.Array(AdminBackupView) })) },
      },
    },
    async (request) => ok(request, { backups: (await backups.list()).map((r) => adminBackupView(r)) }),
  );

  app.post(
    '/api/v1/admin/backup/:backup_id/restore',
    {
      config: admin,
      schema: {
        operationId: 'adminRestoreBackup',
        tags: adminTags,
        summary: 'Verify a backup, then restore it as a task (a backup of the current state is taken first)',
        params: BackupIdParams,
        body: AdminRestoreBody,
        response: { 202: Envelope(RestoreStartedView), ...NotFound, ...Busy, ...Refused },
      },
    },
    async (request, reply) => {
      const body = request.body ?? {};
      if (body.confirm_restore !== true) throw confirmRequired('confirm_restore');
      const started = await backups.startRestore(
        request.params.backup_id,
        {
          components: body.components ? toComponents(body.components) : undefined,
          safetyBackup: body.create_backup_before_restore ?? true,
        },
        originOf(request),
      );
      return reply.code(202).send(ok(request, restoreView('admin', started)));
    },
  );

  app.get(
    '/api/v1/admin/backup/:backup_id/download',
    {
      config: admin,
      schema: {
        operationId: 'adminDownloadBackup',
        tags: adminTags,
        summary: 'The archive file, streamed (not enveloped); 409 until the backup is completed',
        params: BackupIdParams,
        response: { 200: ArchiveFile, ...NotFound, ...Busy, ...Refused },
      },
    },
    async (request, reply) => sendArchive(request.params.backup_id, reply),
  );
}
