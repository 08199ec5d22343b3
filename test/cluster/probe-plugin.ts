import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PLATFORM_VERSION } from '../../src/system/platform-info.js';

export const PROBE_PLUGIN = 'cluster-probe';

/**
 * A local plugin repository holding one tiny plugin, `cluster-probe`, whose public route
 * `GET /api/v1/ext/cluster-probe/ping` answers which process served it — proof that an install made through
 * one instance was loaded by the others.
 */
export function probePluginRepository(): string {
  const root = mkdtempSync(join(tmpdir(), 'platform-cluster-plugins-'));
  const dir = join(root, PROBE_PLUGIN);
  mkdirSync(dir);
  writeFileSync(
    join(dir, 'plugin.json'),
    JSON.stringify({
      name: PROBE_PLUGIN,
      version: '1.0.0',
      description: 'Answers a ping with the id of the process that loaded it',
      platform_version: `>=${PLATFORM_VERSION}`,
      main: 'index.js',
      permissions: ['http:routes'],
    }),
  );
  writeFileSync(
    join(dir, 'index.js'),
    `export default {
  setup(ctx) {
    ctx.routes.get('/ping', () => ({ pid: process.pid }), { access: 'public' });
  },
};
`,
  );
  return root;
}
