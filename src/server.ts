import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import websocket from '@fastify/websocket';
import Fastify, { type FastifyServerOptions } from 'fastify';
import { AuditLog } from './audit/audit-log.js';
import { registerAuditRoutes } from './audit/audit-routes.js';
import { AccessTokens } from './auth/access-tokens.js';
import { ApiKeyStore } from './auth/api-key-store.js';
import { registerAuthRoutes } from './auth/auth-routes.js';
import { AuthService } from './auth/auth-service.js';
import { createPasswordHasher } from './auth/passwords.js';
import { SessionStore } from './auth/session-store.js';
import { randomToken } from './auth/token-hash.js';
import { registerBackupRoutes } from './backups/backup-routes.js';
import { BackupService } from './backups/backup-service.js';
import { registerCacheRoutes } from './cache/cache-routes.js';
import { CacheService } from './cache/cache-service.js';
import { createSharedState } from './cluster/create-shared-state.js';
import type { SharedState } from './cluster/shared-state.js';
import { SharedStateService } from './cluster/shared-state-service.js';
import { registerConfigRoutes } from './config/config-routes.js';
import { ConfigService } from './config/config-service.js';
import type { BootConfig } from './config/load-config.js';
import { consoleDistDir, registerConsoleRoutes } from './console/console-routes.js';
import { EventCipher, newEventKey } from './events/event-cipher.js';
import { registerEventSystem } from './events/event-system.js';
import type { App } from './http/app-type.js';
import { clientErrorHandler } from './http/client-error-handler.js';
import { registerCompression } from './http/compression.js';
import { withoutLeapSeconds } from './http/date-time-format.js';
import { frameworkErrors, registerErrorHandling } from './http/error-handler.js';
import { registerIdempotency } from './http/idempotency.js';
import { scheduleIdempotencyKeysCleanup } from './http/idempotency-keys-cleanup.js';
import { registerJsonBodyParser } from './http/json-body-parser.js';
import { lazySchemaCompilers } from './http/lazy-schema-compilers.js';
import { registerOpenApi } from './http/openapi.js';
import { RateLimiter } from './http/rate-limiter.js';
import { registerRequestGates } from './http/request-gates.js';
import { newId } from './kernel/new-id.js';
import { PlatformEvents } from './kernel/platform-events.js';
import { ServiceRegistry } from './kernel/service-registry.js';
import { lazyChildLoggerFactory } from './logs/lazy-child-logger.js';
import { registerLogRoutes } from './logs/log-routes.js';
import { loggerOptions } from './logs/logger-options.js';
import { createPlatformLogging } from './logs/platform-logging.js';
import { RequestLogController } from './logs/request-log-controller.js';
import { Mailer } from './mail/mailer.js';
import { MetricsCollector } from './metrics/metrics-collector.js';
import { registerMetricsRoutes } from './metrics/metrics-routes.js';
import { registerRequestMetrics } from './metrics/request-metrics-hook.js';
import type { PlatformContext } from './platform-context.js';
import type { PluginManager } from './plugins/plugin-manager.js';
import { registerPluginModule } from './plugins/register-plugin-module.js';
import { registerBlockedIpRoutes } from './security/blocked-ip-routes.js';
import { BlockedIps } from './security/blocked-ips.js';
import { proxyTrust } from './security/ip-ranges.js';
import { registerSecurityModule } from './security/register-security-module.js';
import { registerServiceRoutes } from './services/service-routes.js';
import { bookkeeping } from './storage/bookkeeping.js';
import { bulkWrites } from './storage/bulk-writes.js';
import { createDatabase } from './storage/create-database.js';
import type { Database } from './storage/database.js';
import { DatabaseService } from './storage/database-service.js';
import { KyselyIdempotencyStore } from './storage/idempotency-store.js';
import { migrateToLatest } from './storage/migrate.js';
import { Diagnostics } from './system/diagnostics.js';
import { registerDiagnosticsRoutes } from './system/diagnostics-routes.js';
import { registerDiagnosticsTask } from './system/diagnostics-task.js';
import { registerHealthRoutes } from './system/health-routes.js';
import { Maintenance } from './system/maintenance.js';
import { registerMaintenanceRoutes } from './system/maintenance-routes.js';
import { PLATFORM_VERSION } from './system/platform-info.js';
import { SystemRestart } from './system/restart.js';
import { RestartGate } from './system/restart-gate.js';
import { registerRestartRoutes } from './system/restart-routes.js';
import { SystemHealth } from './system/system-health.js';
import { registerSystemHealthRoutes } from './system/system-health-routes.js';
import { collectorTotals, SystemHealthWindow } from './system/system-health-window.js';
import { SystemStateStore } from './system/system-state-store.js';
import { registerDatabaseCleanup } from './tasks/database-cleanup-task.js';
import { Scheduler } from './tasks/scheduler.js';
import { registerTaskRoutes } from './tasks/task-routes.js';
import { TaskRunner } from './tasks/task-runner.js';
import { TaskStore } from './tasks/task-store.js';
import { createTracing } from './tracing/tracing.js';
import { TracingService } from './tracing/tracing-service.js';
import { bootstrapAdmin } from './users/bootstrap-admin.js';
import { registerUserModule } from './users/register-user-module.js';
import { UserStore } from './users/user-store.js';
import { registerWebhookModule } from './webhooks/register-webhook-module.js';

export interface Platform {
  readonly app: App;
  readonly context: PlatformContext;
  /** Starts listening; resolves to the base URL (`http://127.0.0.1:8080`). */
  listen(): Promise<string>;
  /** Graceful stop: stop accepting, finish in-flight requests, stop services in reverse order, close storage. */
  close(): Promise<void>;
}

export interface PlatformOptions {
  boot: BootConfig;
  /** Where one-time notices (the generated admin password) are printed. */
  print?: (text: string) => void;
  /** Where log lines go instead of stdout (tests read them to prove that secrets are never logged). */
  logStream?: { write(line: string): void };
  /**
   * How route schemas are compiled: by default on first use, from the build's precompiled functions when there
   * are (http/lazy-schema-compilers.ts). The build's precompile step passes its own, which writes them.
   */
  schemaController?: FastifyServerOptions['schemaController'];
}

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** The composition root: config → backends → services → HTTP routes. */
export async function createPlatform(options: PlatformOptions): Promise<Platform> {
  const { boot } = options;
  const closers: (() => Promise<void> | void)[] = [];
  const database: Database = await createDatabase(boot.config);
  closers.push(() => database.close());
  let shared: SharedState | undefined;
  try {
    await migrateToLatest(database.db as never);
    shared = await createSharedState(boot.config);
    const sharedState = shared;
    closers.push(() => sharedState.close());
    return await assemble(options, database, sharedState, closers);
  } catch (err) {
    for (const close of closers.reverse()) await Promise.resolve(close()).catch(() => {});
    throw err;
  }
}

async function assemble(
  options: PlatformOptions,
  database: Database,
  shared: SharedState,
  closers: (() => Promise<void> | void)[],
): Promise<Platform> {
  const { boot } = options;
  const db = database.db;
  const config = new ConfigService(boot, db, shared);
  await config.start();
  closers.push(() => config.stop());
  const cfg = () => config.current();
  const startedAt = Date.now();
  // Closed after the services stopped (closers run last registered first): their last spans are exported.
  // The tracing component (export failures: counted, logged, in health) exists only with an endpoint.
  const endpoint = cfg().tracing.otlp_endpoint;
  const tracingService = endpoint === '' ? undefined : new TracingService(endpoint);
  const tracing = await createTracing(cfg().tracing, PLATFORM_VERSION, tracingService);
  closers.push(() => tracing.close());

  // stdout (or options.logStream) at logging.level, plus the log store at INFO and above.
  const logging = await createPlatformLogging({ cfg, database, stdout: options.logStream });
  closers.push(() => logging.service.close());
  const app = Fastify({
    logger: loggerOptions(cfg().logging.level, logging.output),
    genReqId: (req) => {
      const incoming = req.headers['x-request-id'];
      return typeof incoming === 'string' && REQUEST_ID.test(incoming) ? incoming : newId('req');
    },
    requestIdHeader: false,
    // A function, not a list, so a change of server.trusted_proxies applies without a restart.
    trustProxy: proxyTrust(() => cfg().server.trusted_proxies),
    bodyLimit: cfg().server.body_limit_bytes,
    logController: new RequestLogController(logging.output),
    childLoggerFactory: lazyChildLoggerFactory,
    requestTimeout: cfg().server.request_timeout_seconds * 1000,
    return503OnClosing: true,
    frameworkErrors,
    clientErrorHandler,
    ajv: {
      customOptions: { removeAdditional: false, coerceTypes: 'array', useDefaults: true, allErrors: true },
      onCreate: withoutLeapSeconds,
    },
    schemaController: options.schemaController ?? lazySchemaCompilers(),
  }).withTypeProvider<TypeBoxTypeProvider>();
  config.onChange((keys) => {
    if (keys.includes('logging.level')) app.log.level = logging.output.setLevel(cfg().logging.level);
  });

  const systemState = new SystemStateStore(db);
  const jwtSecret =
    cfg().auth.jwt_secret || (await systemState.getOrCreate('auth.jwt_secret', () => randomToken(48)));
  const users = new UserStore(db, database.dialect);
  const sessions = new SessionStore(db, bookkeeping(database));
  const apiKeys = new ApiKeyStore(db, bookkeeping(database));
  const hasher = createPasswordHasher(cfg().auth.argon2_memory_kib, cfg().auth.argon2_time_cost);
  const events = new PlatformEvents();
  const cache = new CacheService({ cfg, shared, onConfigChange: (listener) => config.onChange(listener) });
  closers.push(() => cache.close());
  const auth = new AuthService({
    config: cfg,
    users,
    sessionStore: sessions,
    apiKeys,
    tokens: new AccessTokens(jwtSecret),
    hasher,
    shared,
    events,
    cache,
  });
  closers.push(() => auth.close());
  const audit = new AuditLog(db, bulkWrites(database));
  const maintenance = new Maintenance(systemState, shared);
  await maintenance.start();
  closers.push(() => maintenance.stop());
  const blockedIps = new BlockedIps(db, shared);
  await blockedIps.start();
  closers.push(() => blockedIps.stop());

  const registry = new ServiceRegistry();
  registry.register(new DatabaseService(database));
  registry.register(new SharedStateService(shared));
  registry.register(cache);
  registry.register(logging.service);
  const metrics = new MetricsCollector({
    database,
    cfg,
    registry,
    responses: cache.namespace('api_responses'),
    log: app.log.child({ component: 'metrics' }),
  });
  registry.register(metrics);
  // A running task's progress, and the clean-up's deletions, commit without syncing on the server's thread.
  const taskStore = new TaskStore(db, bulkWrites(database));
  const tasks = new TaskRunner({
    store: taskStore,
    shared,
    events,
    cfg,
    log: app.log,
    reportError: (err) => registry.recordError('task_runner', err),
  });
  registry.register(tasks.service);
  const scheduler = new Scheduler({
    shared,
    log: app.log,
    reportError: (err) => registry.recordError('scheduler', err),
  });
  registry.register(scheduler);

  const context: PlatformContext = {
    app,
    cfg,
    config,
    database,
    shared,
    registry,
    events,
    audit,
    auth,
    users,
    systemState,
    maintenance,
    cache,
    tasks,
    scheduler,
    tracing,
    onClose: (fn) => closers.push(fn),
  };

  registerErrorHandling(app);
  registerJsonBodyParser(app);
  const idempotencyKeys = new KyselyIdempotencyStore(
    db,
    database.unsyncedTransaction ? (work) => database.unsyncedTransaction!(work) : undefined,
  );
  // Answers are kept sealed with the event system's key: a subscription's holds its signing secret.
  const eventKey =
    cfg().events.encryption_key || (await systemState.getOrCreate('events.encryption_key', newEventKey));
  registerIdempotency(app, { store: idempotencyKeys, cfg, cipher: new EventCipher(eventKey) });
  scheduleIdempotencyKeysCleanup(scheduler, idempotencyKeys);
  await registerCompression(app);
  await registerOpenApi(app, PLATFORM_VERSION);
  await app.register(websocket, {
    options: { maxPayload: 1_048_576 },
    // The plugin's own preClose closes every socket bare, before the stream hub (whose streams are the only
    // WebSocket routes) ends them with their final `shutdown` message and resume point (stream-routes). This
    // one only stops taking upgrades; the hub closes the sockets.
    preClose(done) {
      this.websocketServer.close();
      done();
    },
  });
  const rateLimiter = new RateLimiter(shared, cfg);
  registerRequestGates(app, { blockedIps, auth, rateLimiter, maintenance });
  app.addHook('onSend', (request, reply, payload, done) => {
    reply.header('x-request-id', request.id);
    done(null, payload);
  });
  registerRequestMetrics(app, metrics.requests);
  // Requests wait at this gate while services restart in-process (services API, system restart).
  const restartGate = new RestartGate({
    holdMs: () => cfg().server.request_timeout_seconds * 1000,
    drainMs: () => cfg().server.shutdown_grace_seconds * 1000,
  });
  restartGate.register(app);

  registerHealthRoutes(app, { registry, config: cfg, startedAt });
  registerAuthRoutes(app, { auth, users, sessions, apiKeys, rateLimiter });
  registerConfigRoutes(app, { config, audit, events });
  registerMaintenanceRoutes(app, { maintenance, audit, events });
  registerCacheRoutes(app, { cache, audit });
  registerMetricsRoutes(app, { collector: metrics, cache, database, cfg, registry, rateLimiter });
  registerLogRoutes(app, { logs: logging.service });
  registerDatabaseCleanup({
    tasks,
    scheduler,
    store: taskStore,
    db,
    writes: bulkWrites(database),
    cfg,
    reportError: (err) => registry.recordError('scheduler', err),
  });
  registerTaskRoutes(app, { tasks, audit });
  // The plugin module is wired later; a restore (never before start) reloads it through this.
  let plugins: PluginManager | undefined;
  const backups = new BackupService({
    ...{ database, cfg, config, auth, maintenance, systemState, shared, audit, events, tasks, scheduler },
    logs: logging.service,
    log: app.log,
    reloadPlugins: async () => plugins?.reloadAll(),
  });
  registry.register(backups);
  registerBackupRoutes(app, { backups });
  registerServiceRoutes(app, { registry, gate: restartGate, audit, version: PLATFORM_VERSION });
  const healthWindow = new SystemHealthWindow(() => collectorTotals(registry));
  healthWindow.start();
  closers.push(() => healthWindow.stop());
  const systemHealth = new SystemHealth({ registry, cfg, window: healthWindow, startedAt });
  registerSystemHealthRoutes(app, { health: systemHealth });
  const diagnostics = new Diagnostics({ registry, database, shared, tasks, taskStore, cfg });
  registerDiagnosticsTask(tasks, diagnostics);
  registerDiagnosticsRoutes(app, { diagnostics, tasks, audit });
  const systemRestart = new SystemRestart({ registry, gate: restartGate, events, log: app.log });
  // Before the services stop at close: a planned restart is dropped, one under way finishes first.
  app.addHook('onClose', () => systemRestart.close());
  registerRestartRoutes(app, { restart: systemRestart, audit });
  const mailer = new Mailer(cfg, app.log);
  registry.register(mailer);
  if (tracingService) {
    tracingService.attach(app.log);
    registry.register(tracingService);
  }
  const eventSystem = await registerEventSystem(context);
  const webhooks = registerWebhookModule(context, eventSystem, { mailer });
  plugins = await registerPluginModule(context, {
    eventSystem,
    pluginSubscriptions: webhooks.pluginSubscriptions,
    cache,
  });
  registerUserModule(context, { hasher, mailer });
  const security = registerSecurityModule(context);
  registerBlockedIpRoutes(app, { blockedIps, audit, events, alerts: security.alerts });
  registerAuditRoutes(app, { audit });
  if (cfg().console.enabled) await registerConsoleRoutes(app, { distDir: consoleDistDir(cfg()) });

  await bootstrapAdmin(
    users,
    hasher,
    boot.adminPassword,
    app.log,
    options.print ?? ((t) => process.stdout.write(`${t}\n`)),
  );
  await registry.startAll();
  await shared.whenSubscribed();
  await app.ready();

  let closing: Promise<void> | undefined;
  return {
    app,
    context,
    async listen() {
      const { host, port } = cfg().server;
      await app.listen({ host, port });
      const address = app.server.address();
      const actualPort = typeof address === 'object' && address ? address.port : port;
      const hostPart = host.includes(':') ? `[${host}]` : host;
      return `http://${hostPart}:${actualPort}`;
    },
    close() {
      closing ??= (async () => {
        await app.close();
        await registry.stopAll();
        for (const close of closers.reverse()) await Promise.resolve(close()).catch(() => {});
      })();
      return closing;
    },
  };
}
