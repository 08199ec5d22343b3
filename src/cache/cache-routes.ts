import { Type } from '@sinclair/typebox';
import type { AuditLog } from '../audit/audit-log.js';
import { access } from '../http/access.js';
import type { App } from '../http/app-type.js';
import { Envelope, ok } from '../http/envelope.js';
import { optionalBody } from '../http/optional-body.js';
import { CACHE_TYPES } from './cache-namespace.js';
import type { CacheService, ClearLevel } from './cache-service.js';
import { escapeGlob } from './glob-pattern.js';

const MIB = 1024 * 1024;
const round = (n: number) => Math.round(n * 1000) / 1000;

const Pattern = Type.String({
  minLength: 1,
  maxLength: 512,
  description: 'Glob over full keys `<namespace>:<key>` (`*`, `?`, `[abc]`, `\\` escapes); default `*`',
  examples: ['api_responses:*'],
});
const Level = Type.Union([Type.Literal('L1'), Type.Literal('L2'), Type.Literal('all')], {
  description: 'Which level to clear; default `all`',
});
const Levels = Type.Array(Type.Union([Type.Literal('L1'), Type.Literal('L2')]));

const CacheStatusView = Type.Object({
  status: Type.String({ examples: ['healthy'] }),
  memory_usage: Type.Object(
    { used_mb: Type.Number(), available_mb: Type.Number(), total_mb: Type.Number() },
    { description: 'The in-process L1 budget (`cache.l1_max_mb`) and how much of it holds entries' },
  ),
  statistics: Type.Object(
    {
      hit_rate: Type.Number(),
      miss_rate: Type.Number(),
      total_hits: Type.Integer(),
      total_misses: Type.Integer(),
      evictions: Type.Integer(),
    },
    { description: "This instance's lookups since start: a hit on any level counts once" },
  ),
  cache_levels: Type.Array(
    Type.Object({
      level: Type.Union([Type.Literal('L1'), Type.Literal('L2')]),
      type: Type.Union([Type.Literal('memory'), Type.Literal('redis')]),
      size_mb: Type.Number(),
      hit_rate: Type.Number(),
      miss_rate: Type.Number(),
      hits: Type.Integer(),
      misses: Type.Integer(),
      evictions: Type.Integer(),
      entries: Type.Integer(),
    }),
  ),
});

const ClearQuery = Type.Object(
  { pattern: Type.Optional(Pattern), level: Type.Optional(Level) },
  {
    additionalProperties: false,
  },
);
const ClearResult = Type.Object({ cleared_keys: Type.Integer(), pattern: Type.String(), levels: Levels });

const AdminClearBody = Type.Object(
  {
    cache_types: Type.Optional(
      Type.Array(Type.Union(CACHE_TYPES.map((t) => Type.Literal(t))), {
        minItems: 1,
        uniqueItems: true,
        description: 'Default: every type',
      }),
    ),
    pattern: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 512,
        description: 'Glob over keys inside each type; default `*`',
      }),
    ),
  },
  { additionalProperties: false },
);

export function registerCacheRoutes(app: App, deps: { cache: CacheService; audit: AuditLog }): void {
  const { cache } = deps;

  app.get(
    '/api/v1/cache/status',
    {
      config: { access: access.permission('read:system') },
      schema: {
        operationId: 'getCacheStatus',
        tags: ['cache'],
        summary: 'Cache levels, memory and hit statistics of this instance',
        response: { 200: Envelope(CacheStatusView) },
      },
    },
    async (request) => {
      const s = await cache.status();
      const l1 = s.levels.find((l) => l.level === 'L1');
      const used = l1?.bytes ?? 0;
      const lookups = s.hits + s.misses;
      return ok(request, {
        status: s.status,
        memory_usage: {
          used_mb: round(used / MIB),
          available_mb: round(Math.max(0, s.l1MaxBytes - used) / MIB),
          total_mb: round(s.l1MaxBytes / MIB),
        },
        statistics: {
          hit_rate: lookups === 0 ? 0 : round(s.hits / lookups),
          miss_rate: lookups === 0 ? 0 : round(s.misses / lookups),
          total_hits: s.hits,
          total_misses: s.misses,
          evictions: s.evictions,
        },
        cache_levels: s.levels.map((l) => ({
          level: l.level,
          type: l.type,
          size_mb: round(l.bytes / MIB),
          hit_rate: l.hit_rate,
          miss_rate: l.miss_rate,
          hits: l.hits,
          misses: l.misses,
          evictions: l.evictions,
          entries: l.entries,
        })),
      });
    },
  );

  app.delete(
    '/api/v1/cache',
    {
      config: { access: access.permission('write:cache') },
      // The body is optional on DELETE (the query may carry the fields).
      preValidation: optionalBody,
      schema: {
        operationId: 'clearCache',
        tags: ['cache'],
        summary: 'Clear cache keys by glob and level on every instance (query or body; the body wins)',
        querystring: ClearQuery,
        body: ClearQuery,
        response: { 200: Envelope(ClearResult) },
      },
    },
    async (request) => {
      const pattern = request.body.pattern ?? request.query.pattern ?? '*';
      const level: ClearLevel = request.body.level ?? request.query.level ?? 'all';
      const result = await cache.clear(pattern, level);
      await deps.audit.record(request, {
        action: 'cache.clear',
        resourceType: 'cache',
        resourceId: pattern,
        details: { pattern, level, ...result },
      });
      return ok(request, { cleared_keys: result.cleared_keys, pattern, levels: result.levels });
    },
  );

  app.post(
    '/api/v1/admin/system/clear-cache',
    {
      config: { access: access.admin('admin:system') },
      // No body means the defaults: every cache type and pattern `*`.
      preValidation: optionalBody,
      schema: {
        operationId: 'adminClearCache',
        tags: ['admin', 'cache'],
        summary: 'Clear cache types (user_sessions, api_responses, plugin_cache) on every instance and level',
        body: AdminClearBody,
        response: {
          200: Envelope(
            Type.Object({
              cleared_keys: Type.Integer(),
              cache_types: Type.Array(Type.String()),
              pattern: Type.String(),
              levels: Levels,
            }),
          ),
        },
      },
    },
    async (request) => {
      const types = request.body.cache_types ?? [...CACHE_TYPES];
      const pattern = request.body.pattern ?? '*';
      let cleared = 0;
      const levels = new Set<'L1' | 'L2'>();
      for (const type of types) {
        // plugin_cache holds `plugin_cache:<plugin id>:<key>`: the pattern applies after the type.
        // user_sessions lives in L1 only.
        const level = type === 'user_sessions' ? 'L1' : 'all';
        const result = await cache.clear(`${escapeGlob(type)}:${pattern}`, level);
        cleared += result.cleared_keys;
        for (const l of result.levels) levels.add(l);
      }
      const body = { cleared_keys: cleared, cache_types: types, pattern, levels: [...levels] };
      await deps.audit.record(request, {
        action: 'system.clear_cache',
        resourceType: 'cache',
        resourceId: types.join(','),
        details: body,
      });
      return ok(request, body);
    },
  );
}
