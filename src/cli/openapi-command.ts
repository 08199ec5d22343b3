import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type LoadOptions, loadBootConfig } from '../config/load-config.js';
import { createPlatform } from '../server.js';

/**
 * Prints the OpenAPI document. The platform is assembled on a throw-away SQLite folder with in-memory shared
 * state, so printing the document never touches the real database (nor creates its first administrator).
 */
export async function openapiCommand(options: LoadOptions, write: (text: string) => void): Promise<number> {
  const dir = mkdtempSync(join(tmpdir(), 'platform-openapi-'));
  try {
    const platform = await createPlatform({
      boot: loadBootConfig({
        ...options,
        overrides: {
          storage: { data_dir: dir },
          database: { url: '' },
          redis: { url: '' },
          logging: { level: 'silent' },
          auth: { argon2_memory_kib: 1024, argon2_time_cost: 1 },
        },
      }),
      print: () => {},
    });
    try {
      write(`${JSON.stringify(platform.app.swagger(), null, 2)}\n`);
    } finally {
      await platform.close();
    }
    return 0;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
