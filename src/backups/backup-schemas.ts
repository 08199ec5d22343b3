import { Type } from '@sinclair/typebox';
import { Timestamp } from '../http/envelope.js';

/** Component names: the core path says `configuration`, the admin path `config`; both are accepted on both. */
export const ComponentName = Type.Union(
  [
    Type.Literal('configuration'),
    Type.Literal('config'),
    Type.Literal('database'),
    Type.Literal('plugins'),
    Type.Literal('logs'),
  ],
  { description: '`config` is the admin spelling of `configuration`; `logs` is exported, never restored' },
);

const components = (description: string) =>
  Type.Array(ComponentName, { minItems: 1, maxItems: 5, description });

export const BackupIdParams = Type.Object({
  backup_id: Type.String({ minLength: 1, maxLength: 100, examples: ['bkp_01jd8x2k4v6b1c2d3e4f5g6h7j'] }),
});

export const CreateBackupBody = Type.Object(
  {
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
    include: Type.Optional(components('What to back up; default configuration, database and plugins')),
    compression: Type.Optional(Type.Boolean({ default: true, description: 'gzip the archive (.tar.gz)' })),
    encryption: Type.Optional(
      Type.Boolean({
        default: false,
        description: 'AES-256-GCM with a key derived from backups.encryption_key',
      }),
    ),
  },
  {
    additionalProperties: false,
    examples: [{ include: ['configuration', 'database', 'plugins'], compression: true, encryption: false }],
  },
);

export const AdminCreateBackupBody = Type.Object(
  {
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
    include_database: Type.Optional(Type.Boolean({ default: true })),
    include_config: Type.Optional(Type.Boolean({ default: true })),
    include_plugins: Type.Optional(Type.Boolean({ default: true })),
    include_logs: Type.Optional(Type.Boolean({ default: false })),
    include: Type.Optional(
      components("The core path's list of components, accepted here too instead of the include_* flags"),
    ),
    compression: Type.Optional(Type.Boolean({ default: true })),
    encryption: Type.Optional(Type.Boolean({ default: false })),
  },
  {
    additionalProperties: false,
    examples: [{ name: 'before upgrade', include_database: true, include_config: true, include_logs: false }],
  },
);

const restoreCommon = {
  components: Type.Optional(components('What to restore; default every restorable component in the backup')),
  create_backup_before_restore: Type.Optional(
    Type.Boolean({ default: true, description: 'Take a backup of the current state first' }),
  ),
};

export const RestoreBody = Type.Object(
  {
    ...restoreCommon,
    confirm: Type.Optional(Type.Boolean({ description: 'Must be true: a restore replaces current data' })),
  },
  { additionalProperties: false, examples: [{ components: ['database'], confirm: true }] },
);

export const AdminRestoreBody = Type.Object(
  {
    ...restoreCommon,
    confirm_restore: Type.Optional(
      Type.Boolean({ description: 'Must be true: a restore replaces current data' }),
    ),
  },
  {
    additionalProperties: false,
    examples: [
      { components: ['database', 'config'], confirm_restore: true, create_backup_before_restore: true },
    ],
  },
);

const common = {
  size_mb: Type.Number({
    minimum: 0,
    description: 'Archive size in MiB (measured), 3 decimals; 0 until the archive is written',
  }),
  size_bytes: Type.Integer({ minimum: 0, description: '0 until the archive is written' }),
  created_at: Timestamp,
  type: Type.String({ examples: ['manual', 'scheduled'] }),
  compression: Type.Boolean(),
  encryption: Type.Boolean(),
  sha256: Type.Union([Type.String(), Type.Null()], {
    description: 'SHA-256 of the archive file; null until the backup is completed',
  }),
};

const TaskUrl = Type.String({
  description:
    'The archive is written in the background by a task (type `backup`) whose id is the backup id: its ' +
    'progress is there; the backup is `completed` (or `failed`, with `error`) when it ends',
  examples: ['/api/v1/tasks/bkp_01jd8x2k4v6b1c2d3e4f5g6h7j'],
});

const backupFields = {
  id: Type.String(),
  name: Type.String(),
  includes: Type.Array(Type.String()),
  download_url: Type.String(),
  created_by: Type.String(),
  completed_at: Type.Union([Timestamp, Type.Null()]),
  error: Type.Union([Type.String(), Type.Null()]),
  ...common,
};

export const CoreCreatedView = Type.Object(
  {
    ...backupFields,
    backup_id: Type.String({ description: 'The backup id, as the contract names it here (also in `id`)' }),
    status: Type.Literal('created', {
      description: 'Accepted: the backup is listed as `running` until its archive is written',
    }),
    includes: Type.Array(Type.String(), { examples: [['configuration', 'database', 'plugins']] }),
    download_url: Type.String({ examples: ['/api/v1/backup/bkp_01jd8x2k4v6b1c2d3e4f5g6h7j/download'] }),
    task_url: Type.Optional(TaskUrl),
  },
  {
    description:
      'Answered at once, before the archive exists; the download answers 409 RESOURCE_CONFLICT until the ' +
      'backup is completed',
  },
);

export const CoreListItem = Type.Object({
  ...backupFields,
  status: Type.String({ examples: ['completed'], description: 'running, completed or failed' }),
});

export const AdminBackupView = Type.Object({
  ...backupFields,
  status: Type.String({
    examples: ['created', 'completed'],
    description:
      '`created` in the answer to the create request (the archive is then written in the background); ' +
      'listed: `running`, `completed` or `failed`',
  }),
  includes: Type.Array(Type.String(), { examples: [['database', 'config', 'plugins']] }),
  download_url: Type.String({ examples: ['/api/v1/admin/backup/bkp_01jd8x2k4v6b1c2d3e4f5g6h7j/download'] }),
  task_url: Type.Optional(TaskUrl),
});

export const RestoreStartedView = Type.Object({
  restore_id: Type.String({ examples: ['rst_01jd8x2k4v6b1c2d3e4f5g6h7j'] }),
  status: Type.Literal('started'),
  backup_id: Type.String(),
  estimated_duration_ms: Type.Integer({
    minimum: 0,
    description:
      "From measured durations: the backup's own dump time, plus the latest backup's for the safety backup",
  }),
  components: Type.Array(Type.String()),
  task_url: Type.String({
    description: 'The restore runs as a task (type `restore`) whose id is the restore id',
    examples: ['/api/v1/tasks/rst_01jd8x2k4v6b1c2d3e4f5g6h7j'],
  }),
});

const binary = Type.String({ format: 'binary' });

/** The download: the archive file itself, not enveloped. */
export const ArchiveFile = {
  description: 'The archive: .tar.gz, plain .tar without compression, or the encrypted form',
  content: {
    'application/gzip': { schema: binary },
    'application/x-tar': { schema: binary },
    'application/octet-stream': { schema: binary },
  },
  headers: {
    'Content-Disposition': { type: 'string', description: 'attachment; filename="<backup id>.tar.gz"' },
    'X-Backup-Sha256': {
      type: 'string',
      description: 'SHA-256 of the file, as recorded when it was written',
    },
  },
};

/** Domain errors of the backup routes (the gates' own errors are added to every route by the OpenAPI module). */
const envelope = { $ref: 'ErrorEnvelope#' };
/** 409 BACKUP_IN_PROGRESS (another backup or restore runs) or RESOURCE_CONFLICT (the backup is not completed). */
export const Busy = { 409: envelope };
/** 422 BACKUP_INVALID (verification failed), BACKUP_KEY_REQUIRED, or VALIDATION_ERROR (no confirmation). */
export const Refused = { 422: envelope };
export const NotFound = { 404: envelope };
