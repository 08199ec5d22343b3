import { createHash } from 'node:crypto';
import { createReadStream, createWriteStream, type WriteStream } from 'node:fs';
import { lstat, mkdir, readdir, readFile, rm, stat, statfs } from 'node:fs/promises';
import { dirname, join, posix } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { Value } from '@sinclair/typebox/value';
import { Parser, type ReadEntry } from 'tar';
import { AppError } from '../http/app-error.js';
import { decryptingStream, isEncryptedArchive } from './archive-cipher.js';
import { MANIFEST_FILE, Manifest } from './backup-manifest.js';

export interface ArchiveLimits {
  /** Entries (files and folders) an archive may hold. */
  maxEntries: number;
  /** Bytes one unpacked entry may have. */
  maxEntryBytes: number;
  /** Bytes all unpacked entries together may have (also capped by the free space of the disk). */
  maxTotalBytes: number;
}

export const rejected = (reason: string, message: string, details: Record<string, unknown> = {}) =>
  new AppError('BACKUP_INVALID', message, { details: { reason, ...details } });

// Only these names may appear in an archive of ours; anything else means it is not one, or was tampered with.
const ALLOWED_FILE =
  /^(manifest\.json|config\/overrides\.json|database\/[A-Za-z0-9_]+\.jsonl|(plugins|logs)\/.+)$/;
const ALLOWED_DIR = /^(config|database|plugins|logs)(\/.+)?$/;
// The manifest is parsed whole, so it gets its own, small limit.
const MAX_MANIFEST_BYTES = 16 * 1024 * 1024;
const ALLOWED_MANIFEST_PATH = /^(config\/overrides\.json|database\/[A-Za-z0-9_]+\.jsonl|(plugins|logs)\/.+)$/;

/** Whether an archive path is relative, normalised and stays below the folder it is unpacked into. */
function safeRelativePath(path: string): boolean {
  if (path.length === 0 || path.length > 1024 || path.includes('\0') || path.includes('\\')) return false;
  if (path.startsWith('/') || /^[A-Za-z]:/.test(path)) return false;
  const segments = path.split('/');
  if (segments.some((s) => s === '..' || s === '.')) return false;
  return posix.normalize(path) === path || posix.normalize(path) === path.replace(/\/$/, '');
}

/**
 * Unpacks an archive into `dir` (a fresh, private folder) and proves it is one of ours, intact:
 * decrypts (GCM authenticates the whole file), refuses links, device files, absolute or `..` paths and
 * names outside the layout, enforces the entry-count and size limits while streaming, then checks the
 * manifest's schema and that the files on disk are exactly the files it lists, each with its checksum.
 * Throws `BACKUP_INVALID` (or `BACKUP_KEY_REQUIRED`) before anything outside `dir` is touched.
 */
export async function unpackArchive(options: {
  file: string;
  dir: string;
  encryptionKey: string;
  limits: ArchiveLimits;
}): Promise<{ manifest: Manifest; encrypted: boolean }> {
  const { file, dir, limits } = options;
  const size = (await stat(file).catch(() => undefined))?.size;
  if (size === undefined) throw rejected('file_missing', 'The archive file is missing');
  const encrypted = await isEncryptedArchive(file);
  if (encrypted && !options.encryptionKey) {
    throw new AppError(
      'BACKUP_KEY_REQUIRED',
      'The archive is encrypted and no backups.encryption_key is set',
    );
  }
  // GCM authenticates only at the end of the stream, so the plaintext is written beside the folder and
  // only read once the whole file decrypted and authenticated.
  const plain = encrypted ? `${dir}.tar` : file;
  try {
    if (encrypted) await decryptTo(file, plain, options.encryptionKey, size);
    await extractWithin(plain, dir, limits);
  } finally {
    if (encrypted) await rm(plain, { force: true });
  }
  const manifest = await readManifest(dir);
  await verifyFiles(dir, manifest);
  return { manifest, encrypted };
}

async function decryptTo(file: string, target: string, key: string, size: number): Promise<void> {
  try {
    await pipeline(await decryptingStream(file, key, size), createWriteStream(target, { flags: 'wx' }));
  } catch {
    await rm(target, { force: true });
    throw rejected(
      'decryption_failed',
      'The archive cannot be decrypted: wrong key, or the file was altered',
    );
  }
}

/**
 * Streams the archive into `dir` through tar's strict parser. Its filter checks every entry before any byte
 * of it is written; the files are written here (never through a link, never over an existing file), so when
 * the first problem stops the stream, every write under way is known and ended before this settles, and the
 * caller can remove the folder without racing a late write.
 */
async function extractWithin(file: string, dir: string, limits: ArchiveLimits): Promise<void> {
  const disk = await statfs(dir);
  const budget = Math.min(limits.maxTotalBytes, Number(disk.bavail) * Number(disk.bsize));
  const source = createReadStream(file);
  const open = new Set<WriteStream>();
  const writes: Promise<void>[] = [];
  let failure: AppError | undefined;
  let finish: () => void = () => {};
  const finished = new Promise<void>((resolve) => {
    finish = resolve;
  });
  const fail = (error: AppError) => {
    if (failure) return;
    failure = error;
    source.unpipe(parser);
    source.destroy();
    for (const out of open) out.destroy();
    finish();
  };
  let entries = 0;
  let total = 0;
  const parser = new Parser({
    strict: true,
    noResume: true,
    filter: (path: string, entry: unknown) => {
      if (failure) return false;
      const e = entry as ReadEntry;
      total += e.size;
      const problem = entryProblem(path, e, ++entries, limits, budget, total);
      if (problem) fail(rejected(problem[0], problem[1], { entry: path }));
      return !problem;
    },
    onReadEntry: (entry: ReadEntry) => {
      if (failure) {
        entry.resume();
        return;
      }
      const target = join(dir, entry.path);
      writes.push(
        (async () => {
          if (entry.type === 'Directory') {
            await mkdir(target, { recursive: true });
            entry.resume();
            return;
          }
          await mkdir(dirname(target), { recursive: true });
          const out = createWriteStream(target, { flags: 'wx' });
          open.add(out);
          try {
            await pipeline(entry as unknown as AsyncIterable<Buffer>, out);
          } finally {
            open.delete(out);
          }
        })().catch((err: Error) => {
          const duplicate = (err as NodeJS.ErrnoException).code === 'EEXIST';
          fail(
            duplicate
              ? rejected('unexpected_entry', `'${entry.path}' appears twice`, { entry: entry.path })
              : rejected('not_an_archive', `Unpacking '${entry.path}' failed: ${err.message}`),
          );
        }),
      );
    },
  });
  const broken = (err: Error) =>
    fail(rejected('not_an_archive', `The file is not a readable backup archive: ${err.message}`));
  source.on('error', broken);
  parser.on('error', broken);
  parser.on('end', () => finish());
  source.pipe(parser);
  await finished;
  await Promise.allSettled(writes);
  if (failure) throw failure;
}

/** Why an entry may not be unpacked (reason code and message), or undefined when it may. */
function entryProblem(
  path: string,
  entry: ReadEntry,
  count: number,
  limits: ArchiveLimits,
  budget: number,
  total: number,
): [string, string] | undefined {
  if (count > limits.maxEntries) return ['too_many_entries', `More than ${limits.maxEntries} entries`];
  if (!safeRelativePath(path)) return ['unsafe_path', `Entry '${path}' would leave the backup folder`];
  if (entry.type === 'Directory') {
    return ALLOWED_DIR.test(path.replace(/\/$/, ''))
      ? undefined
      : ['unexpected_entry', `Unexpected '${path}'`];
  }
  if (entry.type !== 'File' && entry.type !== 'OldFile') {
    return ['unsafe_entry_type', `Entry '${path}' is a ${entry.type}; only files and folders are allowed`];
  }
  if (!ALLOWED_FILE.test(path)) return ['unexpected_entry', `Unexpected '${path}'`];
  if (path === MANIFEST_FILE && entry.size > MAX_MANIFEST_BYTES) {
    return ['manifest_invalid', `manifest.json is larger than ${MAX_MANIFEST_BYTES} bytes`];
  }
  if (entry.size > limits.maxEntryBytes) {
    return ['entry_too_large', `Entry '${path}' is larger than ${limits.maxEntryBytes} bytes`];
  }
  if (total > budget) return ['archive_too_large', `The unpacked archive would exceed ${budget} bytes`];
  return undefined;
}

async function readManifest(dir: string): Promise<Manifest> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(await readFile(join(dir, MANIFEST_FILE), 'utf8'));
  } catch {
    throw rejected(
      'manifest_missing',
      'The archive has no readable manifest.json; it is not a platform backup',
    );
  }
  if (!Value.Check(Manifest, parsed)) {
    const first = Value.Errors(Manifest, parsed).First();
    throw rejected('manifest_invalid', 'manifest.json is not a platform backup manifest', {
      field: first?.path ?? '',
      problem: first?.message ?? '',
    });
  }
  for (const path of Object.keys(parsed.files)) {
    if (!safeRelativePath(path) || !ALLOWED_MANIFEST_PATH.test(path)) {
      throw rejected('manifest_invalid', `manifest.json lists an unexpected path '${path}'`, { entry: path });
    }
  }
  return parsed;
}

/** The files on disk must be exactly the manifest's, each with its size and SHA-256; no links anywhere. */
async function verifyFiles(dir: string, manifest: Manifest): Promise<void> {
  const found = new Set<string>();
  const walk = async (relative: string) => {
    for (const name of await readdir(join(dir, relative))) {
      const path = relative ? `${relative}/${name}` : name;
      const info = await lstat(join(dir, path));
      if (info.isSymbolicLink()) throw rejected('unsafe_entry_type', `'${path}' is a link`, { entry: path });
      if (info.isDirectory()) await walk(path);
      else if (info.isFile() && info.nlink === 1) found.add(path);
      else throw rejected('unsafe_entry_type', `'${path}' is not a plain file`, { entry: path });
    }
  };
  await walk('');
  found.delete(MANIFEST_FILE);
  for (const [path, expected] of Object.entries(manifest.files)) {
    if (!found.delete(path))
      throw rejected('file_missing', `'${path}' is listed but missing`, { entry: path });
    const actual = await sha256File(join(dir, path));
    if (actual.sha256 !== expected.sha256 || actual.bytes !== expected.bytes) {
      throw rejected('checksum_mismatch', `'${path}' does not match its checksum`, { entry: path });
    }
  }
  const extra = [...found][0];
  if (extra !== undefined) {
    throw rejected('unexpected_entry', `'${extra}' is not listed in the manifest`, { entry: extra });
  }
}

export async function sha256File(file: string): Promise<{ sha256: string; bytes: number }> {
  const hash = createHash('sha256');
  let bytes = 0;
  for await (const chunk of createReadStream(file)) {
    hash.update(chunk as Buffer);
    bytes += (chunk as Buffer).length;
  }
  return { sha256: hash.digest('hex'), bytes };
}
