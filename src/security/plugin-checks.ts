import { sql } from 'kysely';
import type { Finding, SecurityCheck } from './security-check.js';

const isWildcard = (p: string) => p === '*' || p.endsWith(':*');

function parseJson(value: unknown): unknown {
  if (typeof value !== 'string') return value;
  try {
    return JSON.parse(value);
  } catch {
    return undefined;
  }
}

function permissionsOf(row: Record<string, unknown>): string[] {
  const direct = parseJson(row['permissions']);
  const manifest = parseJson(row['manifest']) as Record<string, unknown> | undefined;
  const list = Array.isArray(direct)
    ? direct
    : Array.isArray(manifest?.['permissions'])
      ? manifest['permissions']
      : [];
  return (list as unknown[]).filter((p): p is string => typeof p === 'string');
}

/**
 * Installed plugins with wildcard permissions or from an unknown source. The plugins table belongs to the
 * plugin manager; this check reads it when it exists and reports itself skipped when it does not.
 */
const installedPlugins: SecurityCheck = {
  name: 'installed_plugins',
  component: 'plugins',
  description: 'Plugins holding wildcard permissions, or installed from an unknown source',
  async run({ db }) {
    const tables = await db.introspection.getTables();
    if (!tables.some((t) => t.name === 'plugins')) {
      return { skipped: 'the plugin manager is not installed (no plugins table)' };
    }
    const rows = (await sql<Record<string, unknown>>`select * from plugins`.execute(db)).rows;
    const out: Finding[] = [];
    for (const row of rows) {
      const id = String(row['id'] ?? row['name'] ?? '?');
      const wide = permissionsOf(row).filter(isWildcard);
      if (wide.length > 0) {
        out.push({
          severity: 'high',
          title: `Plugin '${id}' has wildcard permissions`,
          description: `It holds ${wide.join(', ')}, which grant every operation of their area to the plugin's code.`,
          affected_resources: [`plugin:${id}`],
          recommendation: 'Ask the plugin author for narrower permissions, or disable the plugin.',
        });
      }
      const source = typeof row['source'] === 'string' ? row['source'] : undefined;
      if (source !== undefined && source !== 'repository') {
        out.push({
          severity: source === 'file' ? 'medium' : 'high',
          title: `Plugin '${id}' comes from ${source === 'file' ? 'an uploaded file' : `an unknown source (${source})`}`,
          description:
            'Only plugins from a configured repository are checked against a published sha256; this one was not.',
          affected_resources: [`plugin:${id}`],
          recommendation: 'Install plugins from a configured repository (plugins.repositories).',
        });
      }
    }
    return out;
  },
};

export const pluginChecks: SecurityCheck[] = [installedPlugins];
