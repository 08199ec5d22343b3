import { writeFile } from 'node:fs/promises';
import { basename, join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { AppError } from '../http/app-error.js';
import { packFolder } from './plugin-pack.js';

export const PLUGIN_USAGE = `Usage: platform plugin pack <dir> [--out <dir>]

  Validates the plugin folder's plugin.json, packs the folder into <name>-<version>.tgz (in --out, default
  the working folder), writes <name>-<version>.tgz.sha256 beside it, and prints the sha256 in the form of
  sha256sum: "<sha256>  <file>". The same content always gives the same bytes.`;

interface Io {
  out: (text: string) => void;
  err: (text: string) => void;
}

/** `platform plugin …` (only `pack` for now). Exit codes: 0 done, 1 the folder is not a valid plugin, 2 usage. */
export async function pluginCommand(argv: string[], io: Io): Promise<number> {
  let parsed: ReturnType<typeof parse>;
  try {
    parsed = parse(argv);
  } catch (e) {
    io.err(`${(e as Error).message}\n\n${PLUGIN_USAGE}\n`);
    return 2;
  }
  const { values, positionals } = parsed;
  if (values.help) {
    io.out(`${PLUGIN_USAGE}\n`);
    return 0;
  }
  const [sub, dir, ...extra] = positionals;
  if (sub !== 'pack' || !dir || extra.length > 0) {
    io.err(`${PLUGIN_USAGE}\n`);
    return 2;
  }
  try {
    const { archive, manifest, sha256 } = await packFolder(resolve(dir));
    const file = join(resolve(values.out ?? '.'), `${manifest.name}-${manifest.version}.tgz`);
    await writeFile(file, archive);
    await writeFile(`${file}.sha256`, `${sha256}  ${basename(file)}\n`);
    io.out(`${sha256}  ${file}\n`);
    return 0;
  } catch (e) {
    if (e instanceof AppError) {
      const problems = (e.details?.['errors'] as { field: string; reason: string }[] | undefined) ?? [];
      const lines =
        problems.length > 0
          ? problems.map((p) => `  - ${p.field}: ${p.reason}`).join('\n')
          : `  - ${e.message}`;
      io.err(`not a valid plugin:\n${lines}\n`);
      return 1;
    }
    io.err(`plugin pack failed: ${(e as Error).message}\n`);
    return 1;
  }
}

function parse(argv: string[]) {
  return parseArgs({
    args: argv,
    allowPositionals: true,
    options: { out: { type: 'string' }, help: { type: 'boolean', short: 'h' } },
  });
}
