import { type TObject, type TSchema, Type } from '@sinclair/typebox';
import { describeKeys } from './config-descriptions.js';

/**
 * The one schema of the platform's configuration. Every key has a type and a default here.
 * `x-secret` keys are masked wherever config is shown; `x-restart` keys take effect only after a restart.
 */
const secret = { 'x-secret': true } as const;
const restart = { 'x-restart': true } as const;
const section = <T extends Record<string, TSchema>>(props: T) =>
  Type.Object(props, { additionalProperties: false, default: {} });
const window = (max: number, windowSeconds: number) =>
  section({
    // Beyond a million requests a window the limit means nothing (and 1e308 is an "integer" to JSON).
    max: Type.Integer({ minimum: 1, maximum: 1_000_000, default: max }),
    window_seconds: Type.Integer({ minimum: 1, maximum: 86_400, default: windowSeconds }),
  });

export const ConfigSchema = Type.Object(
  {
    server: section({
      host: Type.String({ minLength: 1, maxLength: 255, default: '127.0.0.1', ...restart }),
      port: Type.Integer({ minimum: 0, maximum: 65_535, default: 8080, ...restart }),
      environment: Type.String({ maxLength: 64, default: 'production' }),
      // Read on every request (Fastify's trustProxy in its function form), so a change applies at once.
      // Each entry is an IP address or CIDR range; anything else is refused (see proxySettingProblems).
      trusted_proxies: Type.Array(Type.String({ maxLength: 64 }), { maxItems: 1000, default: [] }),
      body_limit_bytes: Type.Integer({
        minimum: 1024,
        maximum: 64 * 1024 * 1024,
        default: 1_048_576,
        ...restart,
      }),
      request_timeout_seconds: Type.Integer({ minimum: 1, maximum: 3600, default: 30, ...restart }),
      shutdown_grace_seconds: Type.Integer({ minimum: 0, maximum: 600, default: 10 }),
      idempotency_ttl_seconds: Type.Integer({
        minimum: 1,
        maximum: 30 * 86_400,
        default: 86_400,
        description:
          'How long the answer of a request sent with an Idempotency-Key is replayed to its repeats',
      }),
    }),
    storage: section({
      data_dir: Type.String({ minLength: 1, maxLength: 4096, default: './data', ...restart }),
    }),
    database: section({
      url: Type.String({ maxLength: 4096, default: '', ...restart, ...secret }),
      pool_max: Type.Integer({ minimum: 1, maximum: 500, default: 10, ...restart }),
      // SQLite only: `full` syncs every commit to disk before the answer (as PostgreSQL does by default), so a
      // power loss or an operating-system crash loses nothing answered; `normal` syncs at checkpoints only.
      sqlite_synchronous: Type.Union([Type.Literal('full'), Type.Literal('normal')], {
        default: 'full',
        ...restart,
      }),
    }),
    redis: section({
      url: Type.String({ maxLength: 4096, default: '', ...restart, ...secret }),
      key_prefix: Type.String({ maxLength: 128, default: 'platform:', ...restart }),
    }),
    auth: section({
      // Empty: generated at first start and kept in the database; set: at least 32 characters (secret-settings.ts).
      jwt_secret: Type.String({ maxLength: 4096, default: '', ...secret, ...restart }),
      access_token_ttl_seconds: Type.Integer({ minimum: 30, maximum: 86_400, default: 900 }),
      refresh_token_ttl_seconds: Type.Integer({ minimum: 300, maximum: 90 * 86_400, default: 30 * 86_400 }),
      password_min_length: Type.Integer({ minimum: 8, maximum: 128, default: 10 }),
      max_failed_logins: Type.Integer({ minimum: 1, maximum: 100, default: 5 }),
      lockout_minutes: Type.Integer({ minimum: 1, maximum: 1440, default: 15 }),
      // The hasher is built once at start; existing hashes keep their own parameters either way.
      argon2_memory_kib: Type.Integer({ minimum: 1024, maximum: 1_048_576, default: 19_456, ...restart }),
      argon2_time_cost: Type.Integer({ minimum: 1, maximum: 10, default: 2, ...restart }),
    }),
    rate_limits: section({
      enabled: Type.Boolean({ default: true }),
      authenticated: window(1000, 3600),
      anonymous: window(100, 3600),
      auth: window(10, 600),
    }),
    events: section({
      max_payload_bytes: Type.Integer({ minimum: 1024, maximum: 16 * 1024 * 1024, default: 262_144 }),
      retention_days: Type.Integer({ minimum: 0, maximum: 3650, default: 30 }),
      encryption_key: Type.String({ maxLength: 4096, default: '', ...secret, ...restart }),
      max_subscriptions_per_user: Type.Integer({ minimum: 1, maximum: 100_000, default: 100 }),
      stream_buffer_size: Type.Integer({ minimum: 10, maximum: 100_000, default: 1000 }),
      stream_max_lag_seconds: Type.Integer({ minimum: 1, maximum: 3600, default: 60 }),
      stream_heartbeat_seconds: Type.Integer({ minimum: 1, maximum: 300, default: 15 }),
      subscription_error_threshold: Type.Integer({ minimum: 1, maximum: 1000, default: 10 }),
      // A type missing from the event catalogue is refused (EVENT_TYPE_NOT_REGISTERED) instead of stored unchecked.
      catalogue_strict: Type.Boolean({
        default: false,
        description: 'Refuse emits of event types that are not registered in the event catalogue (422)',
      }),
      retention_schedule: Type.String({ minLength: 1, maxLength: 256, default: '41 3 * * *', ...restart }),
      // Read at every run of the compaction job (the stats follow what it has compacted, migration 0030).
      rollup_minute_retention_hours: Type.Integer({ minimum: 1, maximum: 87_600, default: 48 }),
      rollup_compaction_schedule: Type.String({
        minLength: 1,
        maxLength: 256,
        default: '*/10 * * * *',
        ...restart,
      }),
    }),
    webhooks: section({
      allow_private_targets: Type.Boolean({ default: false }),
      default_timeout_seconds: Type.Integer({ minimum: 1, maximum: 60, default: 10 }),
      max_concurrency_per_subscription: Type.Integer({ minimum: 1, maximum: 64, default: 4 }),
      lease_seconds: Type.Integer({ minimum: 5, maximum: 3600, default: 60 }),
      max_in_flight: Type.Integer({ minimum: 1, maximum: 10_000, default: 256 }),
      poll_interval_ms: Type.Integer({ minimum: 10, maximum: 60_000, default: 1000 }),
      max_retry_delay_seconds: Type.Integer({ minimum: 1, maximum: 86_400, default: 3600 }),
      // Multiplies every retry delay of a policy; below 1 only for tests and development.
      retry_delay_scale: Type.Number({ exclusiveMinimum: 0, maximum: 1, default: 1 }),
      disable_after_failing_hours: Type.Number({
        minimum: 0,
        maximum: 8760,
        default: 120,
        description:
          'A webhook subscription whose target failed every attempt for this long is put in error (with a ' +
          'webhook.subscription.disabled event and an e-mail to its owner); 0 turns the rule off',
      }),
    }),
    plugins: section({
      repositories: Type.Array(Type.String({ minLength: 1, maxLength: 4096 }), {
        maxItems: 100,
        default: ['./plugins'],
      }),
      max_failures: Type.Integer({ minimum: 1, maximum: 1000, default: 5 }),
      // Every call into a plugin (setup, a route, an event, a task, teardown); a worker plugin over it is stopped.
      call_timeout_ms: Type.Integer({ minimum: 50, maximum: 600_000, default: 10_000 }),
      // Heap limit of an `isolation: worker` plugin, applied when it is loaded.
      worker_memory_mb: Type.Integer({ minimum: 8, maximum: 16_384, default: 128 }),
      max_log_lines: Type.Integer({ minimum: 10, maximum: 100_000, default: 200 }),
      repository_timeout_seconds: Type.Integer({ minimum: 1, maximum: 600, default: 30 }),
      max_archive_bytes: Type.Integer({ minimum: 1024, maximum: 2 ** 40, default: 20 * 1024 ** 2 }),
      max_archive_entries: Type.Integer({ minimum: 1, maximum: 1_000_000, default: 5000 }),
      max_entry_bytes: Type.Integer({ minimum: 1024, maximum: 2 ** 40, default: 20 * 1024 ** 2 }),
      max_unpacked_bytes: Type.Integer({ minimum: 1024, maximum: 2 ** 40, default: 100 * 1024 ** 2 }),
    }),
    logging: section({
      level: Type.Union(
        [
          Type.Literal('trace'),
          Type.Literal('debug'),
          Type.Literal('info'),
          Type.Literal('warn'),
          Type.Literal('error'),
          Type.Literal('silent'),
        ],
        { default: 'info' },
      ),
      retention_days: Type.Integer({ minimum: 1, maximum: 3650, default: 14 }),
    }),
    metrics: section({
      // Decides the access rule of GET /metrics when the route is registered, hence restart-only.
      public_prometheus: Type.Boolean({ default: false, ...restart }),
      sample_interval_seconds: Type.Integer({ minimum: 1, maximum: 3600, default: 10 }),
      retention_days: Type.Integer({ minimum: 1, maximum: 3650, default: 7 }),
      slow_route_p95_ms: Type.Integer({ minimum: 0, maximum: 600_000, default: 1000 }),
    }),
    mail: section({
      smtp_url: Type.String({ maxLength: 4096, default: '', ...secret }),
      from: Type.String({ maxLength: 320, default: 'Platform <platform@localhost>' }),
      timeout_seconds: Type.Integer({ minimum: 1, maximum: 120, default: 10 }),
    }),
    security: section({
      brute_force_window_minutes: Type.Integer({ minimum: 1, maximum: 1440, default: 15 }),
      brute_force_account_threshold: Type.Integer({ minimum: 2, maximum: 10_000, default: 5 }),
      brute_force_ip_threshold: Type.Integer({ minimum: 2, maximum: 100_000, default: 20 }),
      api_key_stale_days: Type.Integer({ minimum: 1, maximum: 3650, default: 90 }),
      failed_login_retention_days: Type.Integer({ minimum: 1, maximum: 3650, default: 30 }),
      server_error_threshold: Type.Integer({ minimum: 1, maximum: 1_000_000, default: 50 }),
      server_error_window_minutes: Type.Integer({ minimum: 1, maximum: 1440, default: 5 }),
    }),
    backups: section({
      encryption_key: Type.String({ maxLength: 4096, default: '', ...secret }),
      schedule: Type.String({ maxLength: 256, default: '' }),
      retention_count: Type.Integer({ minimum: 1, maximum: 1000, default: 7 }),
      // Limits a restore enforces while unpacking, so an archive cannot exhaust memory or disk.
      max_archive_entries: Type.Integer({ minimum: 10, maximum: 10_000_000, default: 100_000 }),
      max_entry_bytes: Type.Integer({ minimum: 1024, maximum: 2 ** 50, default: 4 * 1024 ** 3 }),
      max_unpacked_bytes: Type.Integer({ minimum: 1024, maximum: 2 ** 50, default: 16 * 1024 ** 3 }),
      // The one-at-a-time lock is renewed every third of this while a backup or restore runs; a process that
      // dies holding it blocks the others this long at most. Fractions of a second are for tests.
      lock_lease_seconds: Type.Number({ minimum: 0.1, maximum: 3600, default: 30 }),
    }),
    tasks: section({
      lease_seconds: Type.Integer({ minimum: 1, maximum: 3600, default: 30 }),
      retention_days: Type.Integer({ minimum: 1, maximum: 3650, default: 30 }),
      cleanup_schedule: Type.String({ minLength: 1, maxLength: 256, default: '17 3 * * *', ...restart }),
      max_log_lines: Type.Integer({ minimum: 10, maximum: 100_000, default: 1000 }),
      stop_timeout_seconds: Type.Integer({ minimum: 0, maximum: 600, default: 5 }),
    }),
    health: section({
      memory_limit_mb: Type.Integer({ minimum: 0, maximum: 1_048_576, default: 0 }),
      memory_warning_percent: Type.Integer({ minimum: 1, maximum: 100, default: 85 }),
    }),
    cache: section({
      l1_max_entries: Type.Integer({ minimum: 10, maximum: 10_000_000, default: 10_000 }),
      default_ttl_seconds: Type.Integer({ minimum: 1, maximum: 86_400 * 30, default: 300 }),
      l1_max_mb: Type.Integer({ minimum: 1, maximum: 65_536, default: 64 }),
    }),
    tracing: section({
      otlp_endpoint: Type.String({
        maxLength: 4096,
        pattern: '^(https?://.+)?$',
        default: '',
        description:
          'OTLP/HTTP receiver traces are exported to (e.g. http://127.0.0.1:4318); empty means no export',
        ...restart,
      }),
      service_name: Type.String({
        minLength: 1,
        maxLength: 255,
        default: 'platform',
        description: 'The service.name resource attribute of exported spans',
        ...restart,
      }),
      export_interval_ms: Type.Integer({
        minimum: 100,
        maximum: 600_000,
        default: 5000,
        description: 'How often finished spans are sent to the OTLP endpoint, in milliseconds',
        ...restart,
      }),
    }),
    console: section({
      enabled: Type.Boolean({ default: true, ...restart }),
      dist_dir: Type.String({
        maxLength: 4096,
        default: '',
        description: 'Folder of the built console; empty means console/dist of the installation',
        ...restart,
      }),
    }),
  },
  { additionalProperties: false },
);

// Every key's meaning (config-descriptions.ts), shown by the OpenAPI document and the console.
describeKeys(ConfigSchema);

export type PlatformConfig = typeof ConfigSchema.static;

/** The schema of one dotted key (`server.port`), or undefined when there is no such key. */
export function schemaAt(path: readonly string[]): TSchema | undefined {
  let node: TSchema = ConfigSchema;
  for (const part of path) {
    const props = (node as TObject).properties as Record<string, TSchema> | undefined;
    if (!props || !Object.hasOwn(props, part)) return undefined;
    node = props[part] as TSchema;
  }
  return node;
}

/** Every leaf key of the schema as a dotted path, with its flags. */
export function leafKeys(): { path: string; secret: boolean; restart: boolean }[] {
  const out: { path: string; secret: boolean; restart: boolean }[] = [];
  const walk = (node: TSchema, prefix: string[]) => {
    const props = (node as TObject).properties as Record<string, TSchema> | undefined;
    if (node.type === 'object' && props) {
      for (const [k, v] of Object.entries(props)) walk(v, [...prefix, k]);
      return;
    }
    out.push({
      path: prefix.join('.'),
      secret: node['x-secret'] === true,
      restart: node['x-restart'] === true,
    });
  };
  walk(ConfigSchema, []);
  return out;
}
