import { accessSync, constants } from 'node:fs';

/** Where Debian (and most distributions) put their Chromium. */
const SYSTEM_CHROMIUM = ['/usr/bin/chromium', '/usr/bin/chromium-browser'];

function executable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/**
 * The Chromium the console tests drive, decided once per run (by the global setup, before any worker starts):
 * `CHROMIUM_PATH` when it names a program; else the system's Chromium when there is one; else the build that
 * the `@sparticuz/chromium` dev dependency carries inside its npm package, unpacked into the temporary folder
 * (so `npm install && npm test` needs no browser installed by hand). `CHROMIUM_PATH` set to anything that is
 * not a program (an empty value, a missing file) skips the system's Chromium: `.ci/run` runs the console tests
 * that way once, so the fallback is proven on every run.
 */
export async function resolveChromium(env: NodeJS.ProcessEnv = process.env): Promise<{
  path: string;
  origin: 'CHROMIUM_PATH' | 'system' | 'bundled';
}> {
  const named = env['CHROMIUM_PATH'];
  if (named !== undefined && named !== '' && executable(named))
    return { path: named, origin: 'CHROMIUM_PATH' };
  if (named === undefined) {
    const system = SYSTEM_CHROMIUM.find(executable);
    if (system) return { path: system, origin: 'system' };
  }
  const { default: bundled } = await import('@sparticuz/chromium');
  return { path: await bundled.executablePath(), origin: 'bundled' };
}
