import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { resolve } from 'node:path';
import { deepFreeze } from '../kernel/deep-freeze.js';
import type { PlatformConfig } from './config-schema.js';
import { schemaAt } from './config-schema.js';
import {
  type ConfigProblem,
  type ConfigTree,
  configValidationError,
  mergeTrees,
  unflatten,
  validateTree,
} from './config-tree.js';

/** What start-up reads from outside the config tree. `process.env` is read in this module only. */
export interface BootConfig {
  /** Defaults < file < environment, validated and frozen (runtime changes from the database come later). */
  readonly config: PlatformConfig;
  /** The file + environment layers alone, kept so a reload can re-read them and re-apply database changes. */
  readonly layers: ConfigTree;
  readonly configFile: string | undefined;
  readonly adminPassword: string | undefined;
  /** Reads the same sources again (the same file, environment and overrides), as `POST …/config/reload` does. */
  reload(): BootConfig;
}

export interface LoadOptions {
  configFile?: string;
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  /** Extra values above the environment (tests and the CLI use this). */
  overrides?: ConfigTree;
}

const DEFAULT_FILES = ['platform.config.yaml', 'platform.config.yml', 'platform.config.json'];

export function loadBootConfig(options: LoadOptions = {}): BootConfig {
  const env = options.env ?? process.env;
  const cwd = options.cwd ?? process.cwd();
  const problems: ConfigProblem[] = [];

  const explicit = options.configFile ?? env['PLATFORM_CONFIG'];
  const configFile = explicit
    ? resolve(cwd, explicit)
    : DEFAULT_FILES.map((f) => resolve(cwd, f)).find((f) => existsSync(f));
  let fileTree: ConfigTree = {};
  if (configFile) {
    try {
      const text = readFileSync(configFile, 'utf8');
      // The YAML parser is loaded only when a YAML file is there to read.
      const parsed: unknown = configFile.endsWith('.json')
        ? JSON.parse(text)
        : (createRequire(import.meta.url)('yaml') as typeof import('yaml')).parse(text);
      if (parsed !== null && parsed !== undefined) {
        if (typeof parsed !== 'object' || Array.isArray(parsed))
          problems.push({ field: '(file)', reason: 'must be a mapping' });
        else fileTree = parsed as ConfigTree;
      }
    } catch (err) {
      problems.push({ field: '(file)', reason: `cannot read ${configFile}: ${(err as Error).message}` });
    }
  }

  const { tree: envTree, problems: envProblems } = readEnvironment(env);
  problems.push(...envProblems);

  const layers = mergeTrees(mergeTrees(fileTree, envTree), options.overrides ?? {});
  const { config, problems: schemaProblems } = validateTree(layers);
  problems.push(...schemaProblems);
  if (problems.length > 0 || !config) throw configValidationError(problems);

  return deepFreeze({
    config,
    layers,
    configFile,
    adminPassword: env['PLATFORM_ADMIN_PASSWORD'] || undefined,
    // A file found at start stays the file; with none, a reload looks for the default names again.
    reload: () => loadBootConfig({ ...options, env, cwd, configFile }),
  });
}

/** `PLATFORM__SERVER__PORT=9000` → `{server: {port: 9000}}`, typed by the schema of the key. */
export function readEnvironment(env: NodeJS.ProcessEnv): { tree: ConfigTree; problems: ConfigProblem[] } {
  const entries: Record<string, unknown> = {};
  const problems: ConfigProblem[] = [];
  for (const [name, raw] of Object.entries(env)) {
    if (!name.startsWith('PLATFORM__') || raw === undefined) continue;
    const path = name.slice('PLATFORM__'.length).toLowerCase().split('__');
    const field = path.join('.');
    const schema = schemaAt(path);
    if (!schema || schema.type === 'object') {
      problems.push({ field, reason: `unknown key (from ${name})` });
      continue;
    }
    const value = coerce(raw, schema.type as string);
    if (value === undefined)
      problems.push({ field, reason: `cannot read '${raw}' as ${schema.type} (from ${name})` });
    else entries[field] = value;
  }
  return { tree: unflatten(entries), problems };
}

function coerce(raw: string, type: string): unknown {
  switch (type) {
    case 'integer': {
      const n = Number(raw);
      return raw.trim() !== '' && Number.isInteger(n) ? n : undefined;
    }
    case 'number': {
      const n = Number(raw);
      return raw.trim() !== '' && Number.isFinite(n) ? n : undefined;
    }
    case 'boolean': {
      const word = raw.trim().toLowerCase();
      return word === 'true' || word === '1' ? true : word === 'false' || word === '0' ? false : undefined;
    }
    case 'array':
      if (raw.trim().startsWith('[')) {
        try {
          const parsed: unknown = JSON.parse(raw);
          return Array.isArray(parsed) ? parsed : undefined;
        } catch {
          return undefined;
        }
      }
      return raw
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean);
    default:
      return raw;
  }
}
