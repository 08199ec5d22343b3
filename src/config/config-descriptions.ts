import type { TObject, TSchema } from '@sinclair/typebox';

/**
 * What each configuration key means, in the words of docs/configuration.md (keep the two alike). Applied to
 * the schema (config-schema.ts) as each key's `description`, so the OpenAPI document and the console show it
 * beside the key; a description written on the key itself wins.
 */
export const CONFIG_DESCRIPTIONS: Record<string, string> = {
  'server.host': 'Address the HTTP interface listens on; 0.0.0.0 (or ::) for every interface.',
  'server.port':
    'Port of the HTTP interface. 0 picks a free port; the start-up line listening on http://HOST:PORT says which.',
  'server.environment':
    'A label for this deployment (production, staging, …), reported as environment by GET /api/v1/status.',
  'server.trusted_proxies':
    'Proxies (addresses or CIDR ranges; anything else is refused) whose X-Forwarded-For is believed. An entry sent with a port (203.0.113.7:5555, [2001:db8::1]:5555) is read as the address alone. Only then is the forwarded address the client IP for rate limits, blocked IPs and the audit log.',
  'server.body_limit_bytes':
    'Largest request body accepted; a larger one is refused with PAYLOAD_TOO_LARGE (413).',
  'server.request_timeout_seconds':
    'Time a client has to send a whole request before the connection is dropped.',
  'server.shutdown_grace_seconds':
    'On SIGTERM or SIGINT, how long in-flight requests and running services may take to finish; after it the process exits with code 1 anyway.',
  'storage.data_dir':
    'Folder of the SQLite database (platform.db), the log store, backups and plugin packages; relative paths are taken from the working folder.',
  'database.url':
    'Empty: SQLite in storage.data_dir. postgres://user:password@host:5432/name uses PostgreSQL (cluster mode); sqlite:/path/file.db a SQLite file elsewhere.',
  'database.pool_max': 'Largest number of PostgreSQL connections per instance.',
  'database.sqlite_synchronous':
    "SQLite only: how a commit reaches the disk. full syncs the write-ahead log on every commit, before the answer, so nothing answered is lost even when the machine loses power (PostgreSQL's default does the same). normal syncs only at checkpoints: an answered write survives a crash of the process, but the last second or so of them can be lost with the machine. GET /api/v1/services/database reports the setting in effect (config.synchronous).",
  'redis.url':
    'redis://… turns on the cluster backends: rate-limit counters, locks, pub/sub between instances and the L2 cache live in Redis. Empty: in memory (one instance).',
  'redis.key_prefix': 'Prefix of every Redis key and channel, so several platforms can share one Redis.',
  'auth.jwt_secret':
    'Key that signs access tokens (HS256). Empty: one is generated on the first start and stored in the database, shared by every instance. Changing it ends every access token at once. A shorter value is refused: anyone who guesses it can sign tokens for any user.',
  'auth.access_token_ttl_seconds': 'Lifetime of an access token (JWT).',
  'auth.refresh_token_ttl_seconds': 'Lifetime of a session: how long its refresh token can be used.',
  'auth.password_min_length': 'Shortest password accepted when a password is set or changed.',
  'auth.max_failed_logins': 'Failed logins in a row that lock an account.',
  'auth.lockout_minutes': 'How long a locked account stays locked.',
  'auth.argon2_memory_kib':
    'argon2id memory cost of new password hashes; existing hashes keep the cost they were made with.',
  'auth.argon2_time_cost': 'argon2id time cost (iterations) of new password hashes.',
  'rate_limits.enabled': 'false turns every rate limit off.',
  'rate_limits.authenticated.max':
    'Requests per window for each authenticated principal (a user, or an API key on its own).',
  'rate_limits.authenticated.window_seconds': 'Length of the authenticated fixed window.',
  'rate_limits.anonymous.max': 'Requests per window for each client IP without credentials.',
  'rate_limits.anonymous.window_seconds': 'Length of the anonymous fixed window.',
  'rate_limits.auth.max':
    "Requests per window for each client IP to the authentication endpoints (login, logout, change-password, and refused refreshes; a refresh with a valid token counts in its user's authenticated bucket).",
  'rate_limits.auth.window_seconds': 'Length of the authentication-endpoint fixed window.',
  'events.max_payload_bytes':
    'Largest event data (as JSON); a larger one is refused with EVENT_TOO_LARGE (413).',
  'events.retention_days':
    'Events older than this many days are purged daily (events.retention_schedule); 0 keeps events forever.',
  'events.encryption_key':
    'Key for what is kept encrypted at rest (AES-256-GCM): confidential event data, webhook secrets and the secrets of plugin configurations. Empty: one is generated on the first start and stored in the database. A shorter value is refused.',
  'events.max_subscriptions_per_user':
    'Subscriptions one user may hold; one more is refused with SUBSCRIPTION_LIMIT_EXCEEDED (429).',
  'events.stream_buffer_size':
    'Events buffered per stream client before it drops to catch-up from the store.',
  'events.stream_max_lag_seconds':
    'How far a stream client may stay behind before it is closed with an overflow message (it resumes by its last event id).',
  'events.stream_heartbeat_seconds': 'Interval of the : ping comment on server-sent event streams.',
  'events.subscription_error_threshold':
    'Consecutive deliveries that exhausted their retries before a subscription goes to status error.',
  'events.retention_schedule':
    'Cron expression (UTC) of the daily purge of events older than events.retention_days (0 days: never purged); an expression the scheduler cannot run is refused.',
  'events.rollup_minute_retention_hours':
    'Hours of per-minute roll-ups kept for GET /api/v1/events/stats; older minutes are folded into the hour roll-ups (events.rollup_compaction_schedule), and a stats range bound older than this is counted to the whole hour.',
  'events.rollup_compaction_schedule':
    'Cron expression (UTC) of the job that folds minute roll-ups older than events.rollup_minute_retention_hours into the hour roll-ups, in small batches.',
  'webhooks.allow_private_targets':
    "Allow webhook targets — and the targets of plugins' ctx.http.fetch (the notifier plugin's chat URL among them) — on loopback, private, link-local and metadata addresses (development and tests only).",
  'webhooks.default_timeout_seconds':
    'Timeout of one delivery attempt when the subscription does not set timeout_seconds.',
  'webhooks.max_concurrency_per_subscription': 'Deliveries in flight at once per subscription.',
  'webhooks.lease_seconds':
    'How long an instance holds a claimed delivery before another instance may take it over.',
  'webhooks.max_in_flight':
    'Deliveries one instance holds at once (claimed or in flight) over all subscriptions.',
  'webhooks.poll_interval_ms':
    'How often the dispatcher looks for due deliveries besides being woken by new events (retries, deliveries queued by other instances).',
  'webhooks.max_retry_delay_seconds':
    'Upper bound of the wait before a retry, also when the target asks for longer with Retry-After.',
  'webhooks.retry_delay_scale':
    "Multiplies every retry delay of a subscription's policy (not a target's Retry-After); below 1 only for tests and development.",
  'plugins.repositories':
    'Where source: repository installs come from: local folders or HTTP index URLs, in order. A relative folder is resolved against the installation folder, so the default is the bundled first-party plugins.',
  'plugins.max_failures':
    'Failures (a throwing route, event or task handler, a call outside its permissions) a plugin may have, counted on every instance together since it was last enabled, installed or updated, before it is disabled everywhere with status error. See plugins.md.',
  'plugins.call_timeout_ms':
    'Bound of every call into a plugin (setup, a route, an event or task handler, teardown). A worker plugin over it has its worker terminated and is put in error; an inline one is given up on (the call fails and counts as a failure).',
  'plugins.worker_memory_mb':
    "Heap limit of an isolation: worker plugin's process (--max-old-space-size), applied when it is next loaded; a process over it is stopped and the plugin put in error.",
  'plugins.max_log_lines':
    'Lines of ctx.logger kept per plugin for its detail (the log store keeps them too, by logging.retention_days).',
  'plugins.repository_timeout_seconds':
    'How long reading an HTTP repository index or downloading a package may take.',
  'plugins.max_archive_bytes':
    'Largest package archive (.tgz, compressed) accepted from an upload or a repository.',
  'plugins.max_archive_entries': 'Most entries (files, folders, links) a package archive may hold.',
  'plugins.max_entry_bytes': 'Largest single unpacked file of a package.',
  'plugins.max_unpacked_bytes':
    'Most bytes a package may unpack to, all files together (checked while decompressing, so an archive bomb stops early).',
  'logging.level': 'Least severe level written to stdout.',
  'logging.retention_days': 'Days the log store keeps entries for GET /api/v1/admin/system/logs.',
  'metrics.public_prometheus': 'Serve GET /metrics without credentials (otherwise it needs read:metrics).',
  'metrics.sample_interval_seconds': 'Interval at which metrics are sampled into the database.',
  'metrics.retention_days': 'Days metric samples are kept.',
  'metrics.slow_route_p95_ms':
    'p95 response time above which the performance report lists a route as slow; 0 lists none.',
  'mail.smtp_url':
    "SMTP server for the platform's e-mails, e.g. smtp://user:password@host:587 or smtps://…. Empty: e-mails are written to the log store instead of sent.",
  'mail.from': "Sender of the platform's e-mails.",
  'mail.timeout_seconds':
    'Timeout of one SMTP delivery. At shutdown, also how long the e-mails still queued may take to be sent (never past server.shutdown_grace_seconds).',
  'security.brute_force_window_minutes': 'Window in which failed logins are counted for brute-force alerts.',
  'security.brute_force_account_threshold':
    'Failed logins on one account within the window that raise an alert.',
  'security.brute_force_ip_threshold':
    'Failed logins from one address within the window that raise an alert.',
  'security.api_key_stale_days': 'API keys unused for longer are reported by security scans.',
  'security.failed_login_retention_days': 'Days the record of failed logins is kept.',
  'security.server_error_threshold':
    '5xx responses within the window, counted across all instances (shared state), that raise an alert.',
  'security.server_error_window_minutes':
    'Window in which 5xx responses are counted (in cluster mode fixed windows from the Unix epoch, across all instances; one instance: sliding).',
  'backups.encryption_key':
    'Key for encrypted backups (AES-256-GCM, key derived with scrypt). Needed to make and to restore encrypted backups; keep a copy outside the platform. A shorter passphrase is refused.',
  'backups.schedule':
    'Cron expression for scheduled backups (e.g. 0 3 * * *); empty: none; an expression the scheduler cannot run is refused.',
  'backups.retention_count': 'Scheduled backups kept; older scheduled ones are deleted.',
  'backups.max_archive_entries':
    'Most entries a backup archive may hold when it is read (protection against crafted archives).',
  'backups.max_entry_bytes': 'Largest single entry of a backup archive that is read.',
  'backups.max_unpacked_bytes': 'Largest total unpacked size of a backup archive that is read.',
  'backups.lock_lease_seconds':
    'Lease of the cluster-wide backup/restore lock, renewed every third of it while the operation runs; after a crash the lock is free again this long after the last renewal.',
  'tasks.lease_seconds': 'How long an instance holds a running task before another may take it over.',
  'tasks.retention_days': 'Finished tasks older than this are deleted by the cleanup task.',
  'tasks.cleanup_schedule':
    'Cron expression (UTC) of the database cleanup task; an expression the scheduler cannot run is refused.',
  'tasks.max_log_lines': 'Log lines kept per task.',
  'tasks.stop_timeout_seconds':
    'At shutdown, how long running tasks may take to stop before they are marked interrupted.',
  'health.memory_limit_mb': "Memory limit the memory health check measures against; 0 uses V8's heap limit.",
  'health.memory_warning_percent':
    'Share of the limit in use at which the memory check reports warning (unhealthy from 95 %).',
  'cache.l1_max_entries': 'Most entries in the in-process (L1) cache.',
  'cache.default_ttl_seconds': 'Time to live of a cache entry stored without its own.',
  'cache.l1_max_mb': 'Most memory the in-process (L1) cache may use.',
  'console.enabled': 'Serve the admin console at /console (see console.md); false leaves /console a 404.',
  'console.dist_dir': 'Folder of the built console; empty: console/dist of the installation.',
};

/** Sets each leaf key's `description` from CONFIG_DESCRIPTIONS, unless the key has one of its own. */
export function describeKeys(schema: TSchema, prefix: readonly string[] = []): void {
  const props = (schema as TObject).properties as Record<string, TSchema> | undefined;
  if (schema.type === 'object' && props) {
    for (const [k, v] of Object.entries(props)) describeKeys(v, [...prefix, k]);
    return;
  }
  const text = CONFIG_DESCRIPTIONS[prefix.join('.')];
  if (text !== undefined && schema.description === undefined) schema.description = text;
}
