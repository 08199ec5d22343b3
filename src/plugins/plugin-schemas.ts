import { Type } from '@sinclair/typebox';
import { Timestamp } from '../http/envelope.js';
import { PLUGIN_ID } from './plugin-manifest.js';

export const PluginIdParams = Type.Object({
  plugin_id: Type.String({ pattern: PLUGIN_ID, description: "The plugin's id: its manifest name" }),
});

const Status = Type.Union(
  ['installed', 'active', 'disabled', 'error', 'updating'].map((s) => Type.Literal(s)),
  { description: 'installed | active | disabled | error | updating — the same on every instance' },
);
const Health = Type.Union(
  ['healthy', 'degraded', 'unhealthy', 'unknown'].map((s) => Type.Literal(s)),
  { description: 'On this instance: unknown when the plugin is not running here' },
);

/** A plugin in lists (§2.4). */
export const PluginListItem = Type.Object({
  id: Type.String({ examples: ['audit-forwarder'] }),
  name: Type.String(),
  version: Type.String({ examples: ['1.0.0'] }),
  description: Type.String(),
  author: Type.String(),
  status: Status,
  enabled: Type.Boolean(),
  health: Health,
  load_order: Type.Integer({ minimum: 1, description: 'Dependencies load first; ties by name' }),
  dependencies: Type.Array(Type.String(), { description: 'Names of the plugins it depends on' }),
  permissions: Type.Array(Type.String(), { examples: [['events:subscribe', 'http:routes']] }),
  endpoints: Type.Array(Type.String(), { examples: [['GET /api/v1/ext/audit-forwarder/status']] }),
  events: Type.Array(Type.String(), { description: 'Event types it emits (manifest events.emits)' }),
  isolation: Type.Union([Type.Literal('inline'), Type.Literal('worker')]),
  source: Type.String({ examples: ['repository', 'file'] }),
  error: Type.Union([Type.String(), Type.Null()], { description: 'Why the plugin is in error' }),
  metrics: Type.Object(
    {
      requests_handled: Type.Integer({ minimum: 0 }),
      errors: Type.Integer({ minimum: 0 }),
      uptime_seconds: Type.Integer({ minimum: 0 }),
    },
    { description: 'Measured on the instance that answers, since the plugin was loaded there' },
  ),
  installed_at: Timestamp,
  last_updated: Timestamp,
});

const LogLine = Type.Object({
  timestamp: Timestamp,
  level: Type.String({ examples: ['INFO'] }),
  message: Type.String(),
});

/** A plugin's detail (§2.4). */
export const PluginDetail = Type.Object({
  id: Type.String(),
  version: Type.String({ examples: ['1.0.0'], description: 'The installed version, as in the list items' }),
  manifest: Type.Object({
    name: Type.String(),
    version: Type.String(),
    description: Type.String(),
    author: Type.String(),
    license: Type.String(),
    platform_version: Type.String({ examples: ['^0.1.0'] }),
    main: Type.String(),
    dependencies: Type.Record(Type.String(), Type.String()),
    permissions: Type.Array(Type.String()),
    events: Type.Object({ emits: Type.Array(Type.String()), subscribes: Type.Array(Type.String()) }),
    config_schema: Type.Record(Type.String(), Type.Unknown()),
    isolation: Type.String(),
  }),
  status: Status,
  enabled: Type.Boolean(),
  health: Health,
  health_details: Type.Union([Type.Record(Type.String(), Type.Unknown()), Type.Null()], {
    description: 'What the plugin last reported with ctx.health.report',
  }),
  error: Type.Union([Type.String(), Type.Null()]),
  load_order: Type.Integer({ minimum: 1 }),
  previous_version: Type.Union([Type.String(), Type.Null()], { description: 'Kept for a rollback' }),
  source: Type.String(),
  sha256: Type.String(),
  configuration: Type.Record(Type.String(), Type.Unknown(), {
    description: 'Values whose config_schema property has "secret": true are shown as ********',
  }),
  endpoints: Type.Array(Type.String()),
  subscriptions: Type.Array(Type.String(), { description: 'Names of its durable event subscriptions' }),
  task_types: Type.Array(Type.String()),
  metrics: Type.Object({
    requests_handled: Type.Integer({ minimum: 0 }),
    events_handled: Type.Integer({ minimum: 0 }),
    tasks_run: Type.Integer({ minimum: 0 }),
    errors: Type.Integer({ minimum: 0 }),
    uptime_seconds: Type.Integer({ minimum: 0 }),
    requests_per_minute: Type.Number({ minimum: 0, description: 'Requests in the last 60 seconds' }),
    average_response_time: Type.Number({ minimum: 0, description: 'Milliseconds, mean since loaded' }),
    error_rate: Type.Number({ minimum: 0, maximum: 1, description: 'Failures per handled call' }),
    memory_usage_mb: Type.Union([Type.Number({ minimum: 0 }), Type.Null()], {
      description:
        "The worker's own heap (isolation worker); null inline, where the plugin shares the platform's heap",
    }),
  }),
  logs: Type.Array(LogLine, { description: 'The last lines the plugin logged, oldest first' }),
  installed_at: Timestamp,
  last_updated: Timestamp,
});

export const InstallBody = Type.Object(
  {
    source: Type.Union([Type.Literal('repository'), Type.Literal('file')], { default: 'repository' }),
    plugin_name: Type.String({ pattern: PLUGIN_ID }),
    version: Type.String({
      minLength: 1,
      maxLength: 64,
      default: 'latest',
      description: 'A version, or latest',
    }),
    config: Type.Record(Type.String(), Type.Unknown(), {
      default: {},
      description: 'The plugin configuration; `enabled: false` installs without enabling',
    }),
    enabled: Type.Optional(Type.Boolean({ description: 'Enable at once (default true)' })),
  },
  {
    additionalProperties: false,
    examples: [
      { source: 'repository', plugin_name: 'audit-forwarder', version: 'latest', config: { enabled: true } },
    ],
  },
);

export const UpdateBody = Type.Object(
  {
    version: Type.String({ minLength: 1, maxLength: 64, default: 'latest' }),
    backup_current: Type.Boolean({
      default: true,
      description: 'Keep the running version for a later rollback',
    }),
    restart_after_update: Type.Boolean({ default: true, description: 'Start the new version at once' }),
  },
  { additionalProperties: false },
);

export const AvailablePlugin = Type.Object({
  name: Type.String(),
  description: Type.String(),
  versions: Type.Array(Type.String(), { description: 'Newest first' }),
  latest: Type.String(),
  installed_version: Type.Union([Type.String(), Type.Null()]),
});

export const ResourceCreateBody = Type.Object(
  {
    name: Type.String({ pattern: PLUGIN_ID }),
    version: Type.String({ minLength: 1, maxLength: 64, default: 'latest' }),
    description: Type.Optional(
      Type.String({ maxLength: 1000, description: 'Ignored: the manifest describes the plugin' }),
    ),
    config: Type.Record(Type.String(), Type.Unknown(), { default: {} }),
    enabled: Type.Boolean({ default: true }),
  },
  { additionalProperties: false },
);

export const ResourceUpdateBody = Type.Object(
  {
    enabled: Type.Optional(Type.Boolean()),
    config: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
    version: Type.Optional(
      Type.String({ minLength: 1, maxLength: 64, description: 'Starts a plugin_update task' }),
    ),
  },
  { additionalProperties: false },
);

const error = { $ref: 'ErrorEnvelope#' };
/** Domain errors of the plugin operations: unknown plugin or version, dependencies and conflicts, refused packages. */
export const PluginErrors = { 404: error, 409: error, 422: error };
