import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import websocket from '@fastify/websocket';
import Fastify from 'fastify';
import { AuditLog } from './audit/audit-log.js';
import { AccessTokens } from './auth/access-tokens.js';
import { ApiKeyStore } from './auth/api-key-store.js';
import { registerAuthRoutes } from './auth/auth-routes.js';
import { AuthService } from './auth/auth-service.js';
import { createPasswordHasher } from './auth/passwords.js';
import { SessionStore } from './auth/session-store.js';
import { randomToken } from './auth/token-hash.js';
import { createMemorySharedState } from './cluster/memory/memory-shared-state.js';
import { createRedisSharedState } from './cluster/redis/redis-shared-state.js';
import type { SharedState } from './cluster/shared-state.js';
import { SharedStateService } from './cluster/shared-state-service.js';
import { registerConfigRoutes } from './config/config-routes.js';
import { ConfigService } from './config/config-service.js';
import type { BootConfig } from './config/load-config.js';
import type { App } from './http/app-type.js';
import { registerErrorHandling } from './http/error-handler.js';
import { registerOpenApi } from './http/openapi.js';
import { RateLimiter } from './http/rate-limiter.js';
import { registerRequestGates } from './http/request-gates.js';
import { newId } from './kernel/new-id.js';
import { PlatformEvents } from './kernel/platform-events.js';
import { ServiceRegistry } from './kernel/service-registry.js';
import { loggerOptions } from './logs/logger-options.js';
import type { PlatformContext } from './platform-context.js';
import { BlockedIps } from './security/blocked-ips.js';
import { createDatabase } from './storage/create-database.js';
import type { Database } from './storage/database.js';
import { DatabaseService } from './storage/database-service.js';
import { migrateToLatest } from './storage/migrate.js';
import { registerHealthRoutes } from './system/health-routes.js';
import { Maintenance } from './system/maintenance.js';
import { registerMaintenanceRoutes } from './system/maintenance-routes.js';
import { PLATFORM_VERSION } from './system/platform-info.js';
import { SystemStateStore } from './system/system-state-store.js';
import { bootstrapAdmin } from './users/bootstrap-admin.js';
import { UserStore } from './users/user-store.js';

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
}

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** The composition root: config → backends → services → HTTP routes. */
export async function createPlatform(options: PlatformOptions): Promise<Platform> {
  const { boot } = options;
  const closers: (() => Promise<void> | void)[] = [];
  const database: Database = createDatabase(boot.config);
  closers.push(() => database.close());
  let shared: SharedState | undefined;
  try {
    await migrateToLatest(database.db as never);
    shared = boot.config.redis.url
      ? createRedisSharedState(boot.config.redis.url, boot.config.redis.key_prefix)
      : createMemorySharedState();
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
  const config = new ConfigService(boot.layers, { configFile: boot.configFile }, db, shared);
  await config.start();
  closers.push(() => config.stop());
  const cfg = () => config.current();
  const startedAt = Date.now();

  const app = Fastify({
    logger: loggerOptions(cfg().logging.level),
    genReqId: (req) => {
      const incoming = req.headers['x-request-id'];
      return typeof incoming === 'string' && REQUEST_ID.test(incoming) ? incoming : newId('req');
    },
    requestIdHeader: false,
    trustProxy: cfg().server.trusted_proxies.length > 0 ? [...cfg().server.trusted_proxies] : false,
    bodyLimit: cfg().server.body_limit_bytes,
    requestTimeout: cfg().server.request_timeout_seconds * 1000,
    return503OnClosing: true,
    ajv: {
      customOptions: { removeAdditional: false, coerceTypes: 'array', useDefaults: true, allErrors: true },
    },
  }).withTypeProvider<TypeBoxTypeProvider>();
  config.onChange((keys) => {
    if (keys.includes('logging.level')) app.log.level = cfg().logging.level;
  });

  const systemState = new SystemStateStore(db);
  const jwtSecret =
    cfg().auth.jwt_secret || (await systemState.getOrCreate('auth.jwt_secret', () => randomToken(48)));
  const users = new UserStore(db);
  const sessions = new SessionStore(db);
  const apiKeys = new ApiKeyStore(db);
  const hasher = createPasswordHasher(cfg().auth.argon2_memory_kib, cfg().auth.argon2_time_cost);
  const events = new PlatformEvents();
  const auth = new AuthService({
    config: cfg,
    users,
    sessionStore: sessions,
    apiKeys,
    tokens: new AccessTokens(jwtSecret),
    hasher,
    shared,
    events,
  });
  closers.push(() => auth.close());
  const audit = new AuditLog(db);
  const maintenance = new Maintenance(systemState, shared);
  await maintenance.start();
  closers.push(() => maintenance.stop());
  const blockedIps = new BlockedIps(db, shared);
  await blockedIps.start();
  closers.push(() => blockedIps.stop());

  const registry = new ServiceRegistry();
  registry.register(new DatabaseService(database));
  registry.register(new SharedStateService(shared));

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
    onClose: (fn) => closers.push(fn),
  };

  registerErrorHandling(app);
  await registerOpenApi(app, PLATFORM_VERSION);
  await app.register(websocket, { options: { maxPayload: 1_048_576 } });
  registerRequestGates(app, { blockedIps, auth, rateLimiter: new RateLimiter(shared, cfg), maintenance });
  app.addHook('onSend', async (request, reply) => {
    reply.header('x-request-id', request.id);
  });

  registerHealthRoutes(app, { registry, config: cfg, startedAt });
  registerAuthRoutes(app, { auth, users, sessions, apiKeys });
  registerConfigRoutes(app, { config, audit, events });
  registerMaintenanceRoutes(app, { maintenance, audit, events });

  await bootstrapAdmin(
    users,
    hasher,
    boot.adminPassword,
    app.log,
    options.print ?? ((t) => process.stdout.write(`${t}\n`)),
  );
  await registry.startAll();
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
