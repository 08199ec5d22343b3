import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { TObject, TSchema } from '@sinclair/typebox';
import { describe, expect, it } from 'vitest';
import { ConfigSchema, leafKeys, schemaAt } from '../../src/config/config-schema.js';
import { PROJECT_ROOT } from '../../src/system/platform-info.js';

interface Row {
  key: string;
  type: string;
  default: string;
  env: string;
  applies: string;
  secret: string;
  meaning: string;
}

/** The reference rows of docs/configuration.md: `| \`key\` | type | \`default\` | \`ENV\` | hot | no | meaning |`. */
function documentedRows(): Row[] {
  const text = readFileSync(join(PROJECT_ROOT, 'docs', 'configuration.md'), 'utf8');
  const rows: Row[] = [];
  for (const line of text.split('\n')) {
    const match = /^\|\s*`([a-z0-9_]+(?:\.[a-z0-9_]+)+)`\s*\|(.*)\|\s*$/.exec(line);
    if (!match) continue;
    const cells = match[2]!.split(' | ').map((c) => c.trim());
    const [type = '', def = '', env = '', applies = '', secret = '', ...meaning] = cells;
    rows.push({ key: match[1]!, type, default: def, env, applies, secret, meaning: meaning.join(' | ') });
  }
  return rows;
}

const envName = (key: string) => `PLATFORM__${key.toUpperCase().replaceAll('.', '__')}`;

/** The row a key should have, for the failure message of a key that lacks one. */
function expectedRow(key: string): string {
  const schema = schemaAt(key.split('.')) as TSchema;
  const leaf = leafKeys().find((k) => k.path === key)!;
  return `| \`${key}\` | ${schema.type ?? 'one of …'} | \`${JSON.stringify(schema.default)}\` | \`${envName(key)}\` | ${
    leaf.restart ? 'restart' : 'hot'
  } | ${leaf.secret ? 'yes' : 'no'} | what it does |`;
}

describe('docs/configuration.md', () => {
  const rows = documentedRows();
  const byKey = new Map(rows.map((r) => [r.key, r]));

  it('has a reference row for every leaf key of the schema', () => {
    const missing = leafKeys()
      .map((k) => k.path)
      .filter((k) => !byKey.has(k));
    expect(missing.map(expectedRow), 'add these rows to docs/configuration.md').toEqual([]);
  });

  it('documents no key that the schema does not have, and none twice', () => {
    const keys = new Set(leafKeys().map((k) => k.path));
    expect(rows.map((r) => r.key).filter((k) => !keys.has(k))).toEqual([]);
    expect(rows.map((r) => r.key).filter((k, i, all) => all.indexOf(k) !== i)).toEqual([]);
  });

  it('gives each key its real default, environment variable, hot/restart flag and secret flag', () => {
    const problems: string[] = [];
    for (const leaf of leafKeys()) {
      const row = byKey.get(leaf.path);
      if (!row) continue;
      const schema = schemaAt(leaf.path.split('.')) as TSchema;
      const want = {
        default: `\`${JSON.stringify(schema.default)}\``,
        env: `\`${envName(leaf.path)}\``,
        applies: leaf.restart ? 'restart' : 'hot',
        secret: leaf.secret ? 'yes' : 'no',
      };
      for (const [field, value] of Object.entries(want)) {
        const got = row[field as keyof Row];
        if (got !== value) problems.push(`${leaf.path}: ${field} is ${got}, the schema says ${value}`);
      }
      const type = schema.type === undefined ? 'one of' : String(schema.type);
      if (!row.type.startsWith(type))
        problems.push(`${leaf.path}: type is ${row.type}, the schema says ${type}`);
      if (row.meaning.length < 10) problems.push(`${leaf.path}: no meaning given`);
    }
    expect(problems).toEqual([]);
  });

  it('has one reference section per schema section', () => {
    const text = readFileSync(join(PROJECT_ROOT, 'docs', 'configuration.md'), 'utf8');
    for (const section of Object.keys((ConfigSchema as TObject).properties))
      expect(text, `### ${section}`).toContain(`\n### ${section}\n`);
  });
});
