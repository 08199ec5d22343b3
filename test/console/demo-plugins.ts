import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pack, tempRepository, writePlugin } from '../plugins/plugin-fixtures.js';

/** The secret the browser test sets through the API and then must never see on the page. */
export const DEMO_TOKEN = 'demo-token-never-shown';

/**
 * `console-demo` at `version`, with a configuration schema holding a secret; its route tells whether the
 * secret survived an edit in the console (where it is sent back masked) without revealing it.
 */
function writeDemo(repo: string, version: string): void {
  writePlugin(
    repo,
    {
      name: 'console-demo',
      version,
      description: 'A plugin for the console test',
      permissions: ['http:routes'],
      config_schema: {
        type: 'object',
        properties: {
          greeting: { type: 'string', default: 'hi' },
          api_token: { type: 'string', secret: true, default: '' },
        },
        additionalProperties: false,
      },
    },
    `export default { setup(ctx) {
      ctx.logger.info('console-demo ${version} ready');
      ctx.routes.get('/state', () => ({
        version: '${version}',
        greeting: ctx.config.greeting,
        token_kept: ctx.config.api_token === '${DEMO_TOKEN}',
      }));
    } };`,
  );
}

/** A repository with console-demo 1.0.0 and 1.1.0, and a `.tgz` of `console-upload` to install as a file. */
export async function demoPlugins(): Promise<{ repository: string; uploadPath: string }> {
  const repository = tempRepository();
  writeDemo(repository, '1.0.0');
  writeDemo(repository, '1.1.0');
  const uploadDir = writePlugin(
    tempRepository(),
    { name: 'console-upload', version: '2.0.0', description: 'Installed from an uploaded package' },
    'export default { setup() {} };',
  );
  const { archive } = await pack(uploadDir);
  const uploadPath = join(mkdtempSync(join(tmpdir(), 'console-upload-')), 'console-upload-2.0.0.tgz');
  writeFileSync(uploadPath, archive);
  return { repository, uploadPath };
}
