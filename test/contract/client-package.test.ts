import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '../..');
const CLIENT = join(ROOT, 'client');
const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');

describe('the typed client package', () => {
  it('depends on the fetch wrapper alone and compiles without any of the server’s code', () => {
    const manifest = JSON.parse(readFileSync(join(CLIENT, 'package.json'), 'utf8')) as {
      name: string;
      dependencies: Record<string, string>;
      files: string[];
    };
    expect(manifest.name).toBe('platform-client');
    expect(Object.keys(manifest.dependencies)).toEqual(['openapi-fetch']);
    expect(manifest.files).toEqual(['dist']);
    // rootDir is client/src: an import reaching into the server's sources would not compile.
    execFileSync(process.execPath, [tsc, '-p', join(CLIENT, 'tsconfig.json'), '--noEmit'], { cwd: ROOT });
  }, 60_000);
});
