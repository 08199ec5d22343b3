import { lstat, readdir, readFile } from 'node:fs/promises';
import { join, relative, sep } from 'node:path';
import { create } from 'tar';
import { AppError } from '../http/app-error.js';
import { sha256Of } from './plugin-archive.js';
import { type Manifest, parseManifest } from './plugin-manifest.js';

// Left out of a package at any depth: version control, and our own unpack marker.
const SKIPPED = new Set(['.git', '.platform-package.json']);

/**
 * Packs a plugin folder into a `.tgz`, the same bytes for the same content (sorted entries, no owners, no
 * modification times), after validating its manifest and that `main` exists. Used by `platform plugin pack`
 * and for installs from a local repository folder.
 *
 * @throws AppError VALIDATION_ERROR when plugin.json is missing or invalid
 */
export async function packFolder(
  dir: string,
): Promise<{ archive: Buffer; manifest: Manifest; sha256: string }> {
  let text: string;
  try {
    text = await readFile(join(dir, 'plugin.json'), 'utf8');
  } catch {
    throw new AppError('VALIDATION_ERROR', `No plugin.json in ${dir}`, {
      details: { field: 'manifest', reason: 'plugin.json not found' },
    });
  }
  const manifest = parseManifest(text);
  const main = await lstat(join(dir, manifest.main)).catch(() => undefined);
  if (!main?.isFile()) {
    throw new AppError('VALIDATION_ERROR', `The main module '${manifest.main}' does not exist in ${dir}`, {
      details: { field: 'manifest.main', reason: 'file not found in the package' },
    });
  }
  const entries = (await listEntries(dir, dir)).sort();
  const chunks: Buffer[] = [];
  // sync: tar 7.5's asynchronous packer can end its gzip stream twice when a file has several hard links (as
  // pnpm's node_modules do), throwing Z_STREAM_ERROR after the pack; the synchronous one has no such race.
  // A plugin folder is small, and the archive is held in memory anyway.
  const stream = create(
    { cwd: dir, gzip: true, portable: true, noMtime: true, follow: false, noDirRecurse: true, sync: true },
    entries,
  );
  for await (const chunk of stream as AsyncIterable<Buffer>) chunks.push(chunk);
  const archive = Buffer.concat(chunks);
  return { archive, manifest, sha256: sha256Of(archive) };
}

async function listEntries(root: string, dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    if (SKIPPED.has(entry.name)) continue;
    const full = join(dir, entry.name);
    const rel = relative(root, full).split(sep).join('/');
    // Archives (and their .sha256) that earlier packs wrote into the folder itself are not part of it.
    if (dir === root && /\.tgz(\.sha256)?$/.test(entry.name)) continue;
    out.push(rel);
    if (entry.isDirectory()) out.push(...(await listEntries(root, full)));
  }
  return out;
}
