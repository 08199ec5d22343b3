import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { errorCatalogue, errorCodes } from '../../src/http/error-catalogue.js';
import { PROJECT_ROOT } from '../../src/system/platform-info.js';

/** The rows of the table in docs/errors.md: `| \`CODE\` | status | when | what to do |`. */
function documentedRows(): { code: string; status: string; when: string; todo: string }[] {
  const text = readFileSync(join(PROJECT_ROOT, 'docs', 'errors.md'), 'utf8');
  const rows: { code: string; status: string; when: string; todo: string }[] = [];
  for (const line of text.split('\n')) {
    const match = /^\|\s*`([A-Z][A-Z0-9_]*)`\s*\|(.*)\|\s*$/.exec(line);
    if (!match) continue;
    const [status = '', when = '', todo = ''] = match[2]!.split(' | ').map((c) => c.trim());
    rows.push({ code: match[1]!, status, when, todo });
  }
  return rows;
}

describe('error catalogue and docs/errors.md', () => {
  const rows = documentedRows();

  it('documents every catalogue code exactly once', () => {
    const documented = rows.map((r) => r.code);
    const missing = errorCodes.filter((c) => !documented.includes(c));
    expect(missing, 'codes in src/http/error-catalogue.ts without a row in docs/errors.md').toEqual([]);
    const twice = documented.filter((c, i) => documented.indexOf(c) !== i);
    expect(twice).toEqual([]);
  });

  it('documents no code that the catalogue does not have', () => {
    const stale = rows.map((r) => r.code).filter((c) => !(c in errorCatalogue));
    expect(stale, 'rows in docs/errors.md for codes that are not in the catalogue').toEqual([]);
  });

  it('gives each code the HTTP status of the catalogue, when it happens and what to do', () => {
    for (const row of rows) {
      const entry = errorCatalogue[row.code as keyof typeof errorCatalogue];
      if (!entry) continue;
      expect(row.status.split(/\s/)[0], row.code).toBe(String(entry.status));
      expect(row.when.length, `${row.code}: when it happens`).toBeGreaterThan(10);
      expect(row.todo.length, `${row.code}: what the client should do`).toBeGreaterThan(0);
    }
  });

  it('declares codes in upper snake case with an error status and a message', () => {
    for (const [code, entry] of Object.entries(errorCatalogue)) {
      expect(code).toMatch(/^[A-Z][A-Z0-9]*(_[A-Z0-9]+)*$/);
      expect(entry.status).toBeGreaterThanOrEqual(400);
      expect(entry.status).toBeLessThan(600);
      expect(entry.message.length).toBeGreaterThan(0);
    }
  });

  it('keeps the codes of the interface contract with their contract statuses', () => {
    const contract: Record<string, number> = {
      VALIDATION_ERROR: 422,
      AUTHENTICATION_FAILED: 401,
      AUTHORIZATION_DENIED: 403,
      RESOURCE_NOT_FOUND: 404,
      RESOURCE_CONFLICT: 409,
      RATE_LIMIT_EXCEEDED: 429,
      INTERNAL_ERROR: 500,
      ADMIN_REQUIRED: 403,
      INSUFFICIENT_ADMIN_PERMISSIONS: 403,
      SYSTEM_LOCKED: 423,
      BACKUP_IN_PROGRESS: 409,
      PLUGIN_DEPENDENCY_ERROR: 409,
      CONFIG_VALIDATION_ERROR: 400,
      EVENT_NOT_FOUND: 404,
      INVALID_EVENT_TYPE: 400,
      EVENT_TOO_LARGE: 413,
      SUBSCRIPTION_NOT_FOUND: 404,
      SUBSCRIPTION_LIMIT_EXCEEDED: 429,
      WEBHOOK_DELIVERY_FAILED: 502,
      EVENT_EXPIRED: 410,
      INSUFFICIENT_EVENT_PERMISSIONS: 403,
    };
    for (const [code, status] of Object.entries(contract)) {
      expect(errorCatalogue[code as keyof typeof errorCatalogue]?.status, code).toBe(status);
    }
  });
});
