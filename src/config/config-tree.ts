import type { TSchema } from '@sinclair/typebox';
import { Value, ValueErrorType } from '@sinclair/typebox/value';
import { AppError } from '../http/app-error.js';
import { parseCidr } from '../security/ip-ranges.js';
import { ConfigSchema, type PlatformConfig, schemaAt } from './config-schema.js';
import { cronSettingProblems } from './cron-settings.js';
import { secretSettingProblems } from './secret-settings.js';

export type ConfigTree = Record<string, unknown>;
export interface ConfigProblem {
  field: string;
  reason: string;
}

const FORBIDDEN_KEYS = new Set(['__proto__', 'constructor', 'prototype']);

const isPlainObject = (v: unknown): v is ConfigTree =>
  typeof v === 'object' && v !== null && !Array.isArray(v) && Object.getPrototypeOf(v) === Object.prototype;

/**
 * Collects keys that could pollute prototypes; such input is refused, never merged. A dotted key
 * (`"server.__proto__"`) is checked segment by segment, since dotted keys are accepted as a shorthand.
 */
export function findForbiddenKeys(value: unknown, prefix = ''): ConfigProblem[] {
  if (!isPlainObject(value)) return [];
  const out: ConfigProblem[] = [];
  for (const key of Object.keys(value)) {
    const path = prefix ? `${prefix}.${key}` : key;
    if (key.split('.').some((part) => FORBIDDEN_KEYS.has(part)))
      out.push({ field: path, reason: 'forbidden key' });
    else out.push(...findForbiddenKeys(value[key], path));
  }
  return out;
}

/** Deep merge of `source` over `target` into a new object; arrays and scalars replace. */
export function mergeTrees(target: ConfigTree, source: ConfigTree): ConfigTree {
  const out: ConfigTree = { ...target };
  for (const [key, value] of Object.entries(source)) {
    if (FORBIDDEN_KEYS.has(key)) continue;
    const current = out[key];
    out[key] = isPlainObject(current) && isPlainObject(value) ? mergeTrees(current, value) : value;
  }
  return out;
}

/** Flattens a tree into dotted leaf paths: `{server: {port: 1}}` → `{'server.port': 1}`. */
export function flattenTree(tree: ConfigTree, prefix = ''): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(tree)) {
    const path = prefix ? `${prefix}.${key}` : key;
    if (isPlainObject(value) && schemaAt(path.split('.'))?.type === 'object')
      Object.assign(out, flattenTree(value, path));
    else out[path] = value;
  }
  return out;
}

/** Builds a tree from dotted paths. */
export function unflatten(entries: Record<string, unknown>): ConfigTree {
  const out: ConfigTree = {};
  for (const [path, value] of Object.entries(entries)) {
    const parts = path.split('.');
    let node = out;
    for (const part of parts.slice(0, -1)) {
      if (!isPlainObject(node[part])) node[part] = {};
      node = node[part] as ConfigTree;
    }
    node[parts[parts.length - 1] as string] = value;
  }
  return out;
}

/**
 * Applies defaults and validates (the schema, then cron expressions, proxies, secret lengths); returns every
 * problem, not only the first.
 */
export function validateTree(tree: ConfigTree): { config?: PlatformConfig; problems: ConfigProblem[] } {
  const problems = findForbiddenKeys(tree);
  if (problems.length > 0) return { problems };
  const withDefaults = Value.Default(ConfigSchema, structuredClone(tree)) as unknown;
  for (const error of Value.Errors(ConfigSchema, withDefaults)) {
    const field = error.path.replace(/^\//, '').replaceAll('/', '.') || '(root)';
    problems.push({ field, reason: reasonOf(error.type, error.schema, error.message) });
  }
  // Checks beyond what a JSON Schema says: cron expressions, read by the scheduler's own parser.
  problems.push(...cronSettingProblems(withDefaults as PlatformConfig));
  problems.push(...proxySettingProblems(withDefaults as PlatformConfig));
  problems.push(...secretSettingProblems(withDefaults as PlatformConfig));
  if (problems.length > 0) return { problems: dedupe(problems) };
  return { config: withDefaults as PlatformConfig, problems: [] };
}

/** `server.trusted_proxies` entries that are neither an IP address nor a CIDR range (the trust test ignored them). */
function proxySettingProblems(config: PlatformConfig): ConfigProblem[] {
  const proxies: unknown = config.server?.trusted_proxies;
  if (!Array.isArray(proxies)) return [];
  return proxies.flatMap((entry, i) =>
    typeof entry === 'string' && parseCidr(entry) === undefined
      ? [{ field: `server.trusted_proxies.${i}`, reason: 'must be an IP address or a CIDR range' }]
      : [],
  );
}

function reasonOf(type: ValueErrorType, schema: TSchema, message: string): string {
  if (type === ValueErrorType.ObjectAdditionalProperties) return 'unknown key';
  const choices = (schema.anyOf as TSchema[] | undefined)?.map((s) => s.const);
  if (type === ValueErrorType.Union && choices?.every((c) => typeof c === 'string'))
    return `must be one of ${choices.join(', ')}`;
  return message.toLowerCase();
}

function dedupe(problems: ConfigProblem[]): ConfigProblem[] {
  const seen = new Set<string>();
  return problems.filter((p) => {
    const k = `${p.field}|${p.reason}`;
    if (seen.has(k)) return false;
    seen.add(k);
    return true;
  });
}

export function configValidationError(problems: ConfigProblem[]): AppError {
  const first = problems[0];
  return new AppError(
    'CONFIG_VALIDATION_ERROR',
    `Configuration validation failed: ${problems.map((p) => `${p.field}: ${p.reason}`).join('; ')}`,
    { details: { field: first?.field, reason: first?.reason, errors: problems } },
  );
}
