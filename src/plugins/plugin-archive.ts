import { createHash } from 'node:crypto';
import { mkdir, symlink, writeFile } from 'node:fs/promises';
import { dirname, join, posix } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { Parser, type ReadEntry } from 'tar';
import { AppError } from '../http/app-error.js';

/** What a package archive may hold, so an upload cannot exhaust memory or disk. */
export interface ArchiveLimits {
  /** Bytes of the compressed `.tgz`. */
  maxArchiveBytes: number;
  /** Entries (files, folders, links). */
  maxEntries: number;
  /** Bytes of one unpacked file. */
  maxEntryBytes: number;
  /** Bytes of every unpacked file together. */
  maxUnpackedBytes: number;
}

type Entry =
  | { kind: 'dir'; path: string }
  | { kind: 'file'; path: string; data: Buffer; executable: boolean }
  | { kind: 'symlink'; path: string; target: string };

/** The validated content of a package archive, paths relative to the package folder. */
export interface ArchiveContent {
  readonly entries: readonly Entry[];
  /** The bytes of `plugin.json`. */
  readonly manifest: Buffer;
}

export const packageInvalid = (reason: string, message: string, details: Record<string, unknown> = {}) =>
  new AppError('PLUGIN_PACKAGE_INVALID', message, { details: { reason, ...details } });

export const sha256Of = (bytes: Buffer): string => createHash('sha256').update(bytes).digest('hex');

const HEADER_BYTES = 512;

/** Whether an archive path is relative, normalised, and stays below the folder it is unpacked into. */
function safeRelativePath(path: string): boolean {
  if (path.length === 0 || path.length > 1024 || path.includes('\0') || path.includes('\\')) return false;
  if (path.startsWith('/') || /^[A-Za-z]:/.test(path)) return false;
  return !path.split('/').some((s) => s === '..' || s === '.' || s === '');
}

/**
 * Reads a package archive (`.tgz`) in memory and proves it is safe to unpack before anything is written:
 * the compressed and unpacked sizes, the entry count and each entry's size stay within `limits`; every path
 * stays inside the package folder; symbolic links point inside it, also once every link of the archive on their
 * way is followed (a chain of links each harmless alone cannot reach out), and no entry passes through a link; hard
 * links name a file of the archive (their content is copied); device files and FIFOs are refused. The package
 * folder is the archive's root, or its single top-level folder (`package/` as `npm pack` makes it).
 *
 * @throws AppError PLUGIN_PACKAGE_INVALID with `details.reason`
 */
export async function readArchive(bytes: Buffer, limits: ArchiveLimits): Promise<ArchiveContent> {
  if (bytes.length > limits.maxArchiveBytes) {
    throw packageInvalid('archive_too_large', `The archive exceeds ${limits.maxArchiveBytes} bytes`, {
      limit: limits.maxArchiveBytes,
    });
  }
  let tar: Buffer;
  try {
    // The bound covers the content plus a header (and a long-name header) per entry, and the end blocks.
    const bound = limits.maxUnpackedBytes + (limits.maxEntries * 3 + 4) * HEADER_BYTES;
    tar = gunzipSync(bytes, { maxOutputLength: bound });
  } catch (err) {
    if (err instanceof RangeError || (err as { code?: string }).code === 'ERR_BUFFER_TOO_LARGE') {
      throw packageInvalid(
        'unpacked_too_large',
        `The archive unpacks to more than ${limits.maxUnpackedBytes} bytes`,
        {
          limit: limits.maxUnpackedBytes,
        },
      );
    }
    throw packageInvalid('not_gzip', 'The package is not a gzip-compressed tar archive (.tgz)');
  }
  const raw = await parseTar(tar, limits);
  return locatePackage(raw);
}

interface RawEntry {
  type: string;
  path: string;
  linkpath: string;
  data: Buffer;
  mode: number;
}

async function parseTar(tar: Buffer, limits: ArchiveLimits): Promise<RawEntry[]> {
  const entries: RawEntry[] = [];
  let total = 0;
  let failure: AppError | undefined;
  const reading: Promise<void>[] = [];
  const parser = new Parser({
    strict: true,
    onReadEntry: (entry: ReadEntry) => {
      if (failure) {
        entry.resume();
        return;
      }
      const path = entry.path.replace(/^(\.\/)+/, '').replace(/\/+$/, '');
      const size = entry.size ?? 0;
      total += size;
      const problem =
        entries.length + 1 > limits.maxEntries
          ? packageInvalid('too_many_entries', `The archive holds more than ${limits.maxEntries} entries`, {
              limit: limits.maxEntries,
            })
          : size > limits.maxEntryBytes
            ? packageInvalid('entry_too_large', `'${path}' exceeds ${limits.maxEntryBytes} bytes`, {
                entry: path,
                limit: limits.maxEntryBytes,
              })
            : total > limits.maxUnpackedBytes
              ? packageInvalid(
                  'unpacked_too_large',
                  `The archive unpacks to more than ${limits.maxUnpackedBytes} bytes`,
                  {
                    limit: limits.maxUnpackedBytes,
                  },
                )
              : undefined;
      if (problem) {
        failure = problem;
        entry.resume();
        return;
      }
      const chunks: Buffer[] = [];
      reading.push(
        new Promise<void>((resolve) => {
          entry.on('data', (c: Buffer) => chunks.push(c));
          entry.on('end', () => {
            entries.push({
              type: entry.type,
              path,
              linkpath: entry.linkpath ?? '',
              data: Buffer.concat(chunks),
              mode: entry.mode ?? 0o644,
            });
            resolve();
          });
        }),
      );
    },
  });
  await new Promise<void>((resolve) => {
    parser.on('error', (err: Error) => {
      failure ??= packageInvalid('corrupt_archive', `The archive cannot be read: ${err.message}`);
      resolve();
    });
    parser.on('end', () => resolve());
    parser.end(tar);
  });
  await Promise.all(reading);
  if (failure) throw failure;
  if (entries.length === 0) throw packageInvalid('empty_archive', 'The archive holds no files');
  return entries;
}

const MAX_LINK_HOPS = 40;

/**
 * Where the symbolic link at `path` finally leads once every link of the archive on the way is followed, as a
 * path relative to the package folder, or undefined when it leaves the folder (or loops). Each `..` applies to
 * the folder reached so far, as the file system resolves it, not to the text: `d/up -> ..` then
 * `esc -> d/up/..` reads as `d` lexically but is the package's parent on disk.
 */
function finalTarget(path: string, links: ReadonlyMap<string, string>): string | undefined {
  let hops = 0;
  const walk = (base: readonly string[], target: string): string[] | undefined => {
    if (target.startsWith('/') || ++hops > MAX_LINK_HOPS) return undefined;
    const at = [...base];
    for (const part of target.split('/')) {
      if (part === '' || part === '.') continue;
      if (part === '..') {
        if (at.length === 0) return undefined;
        at.pop();
        continue;
      }
      const next = [...at, part].join('/');
      const link = links.get(next);
      if (link === undefined) {
        at.push(part);
        continue;
      }
      const reached = walk(at, link);
      if (reached === undefined) return undefined;
      at.splice(0, at.length, ...reached);
    }
    return at;
  };
  const target = links.get(path);
  if (target === undefined) return undefined;
  return walk(path.split('/').slice(0, -1), target)?.join('/');
}

function locatePackage(raw: RawEntry[]): ArchiveContent {
  for (const e of raw) {
    if (e.path === '') continue;
    if (!safeRelativePath(e.path)) {
      throw packageInvalid(
        'path_escapes',
        `The entry '${e.path}' would be written outside the package folder`,
        {
          entry: e.path,
        },
      );
    }
  }
  const files = raw.filter((e) => e.path !== '');
  let prefix = '';
  if (!files.some((e) => e.path === 'plugin.json')) {
    const tops = new Set(files.map((e) => e.path.split('/')[0]));
    const [top] = [...tops];
    if (tops.size !== 1 || top === undefined || !files.some((e) => e.path === `${top}/plugin.json`)) {
      throw packageInvalid('manifest_missing', 'The package has no plugin.json at its root');
    }
    prefix = `${top}/`;
  }
  const within = files
    .filter((e) => e.path.startsWith(prefix) && e.path.length > prefix.length)
    .map((e) => ({ ...e, path: e.path.slice(prefix.length), linkpath: e.linkpath }));
  const linkTargets = new Map(
    within.filter((e) => e.type === 'SymbolicLink').map((e) => [e.path, e.linkpath] as const),
  );
  const links = new Set(linkTargets.keys());
  const throughLink = (path: string) => {
    const parts = path.split('/');
    for (let i = 1; i < parts.length; i++) if (links.has(parts.slice(0, i).join('/'))) return true;
    return false;
  };
  const fileData = new Map<string, RawEntry>();
  const entries: Entry[] = [];
  const seen = new Set<string>();
  for (const e of within) {
    if (seen.has(e.path) && e.type !== 'Directory') {
      throw packageInvalid('duplicate_entry', `The archive holds '${e.path}' more than once`, {
        entry: e.path,
      });
    }
    seen.add(e.path);
    if (throughLink(e.path)) {
      throw packageInvalid('path_through_link', `The entry '${e.path}' lies below a symbolic link`, {
        entry: e.path,
      });
    }
    switch (e.type) {
      case 'Directory':
        entries.push({ kind: 'dir', path: e.path });
        break;
      case 'File':
      case 'OldFile':
      case 'ContiguousFile':
        fileData.set(e.path, e);
        entries.push({ kind: 'file', path: e.path, data: e.data, executable: (e.mode & 0o111) !== 0 });
        break;
      case 'SymbolicLink': {
        const resolved = e.linkpath.startsWith('/')
          ? e.linkpath
          : posix.normalize(posix.join(posix.dirname(e.path), e.linkpath));
        if (
          resolved.startsWith('/') ||
          resolved === '..' ||
          resolved.startsWith('../') ||
          throughLink(resolved) ||
          finalTarget(e.path, linkTargets) === undefined
        ) {
          throw packageInvalid(
            'link_escapes',
            `The symbolic link '${e.path}' points outside the package folder`,
            {
              entry: e.path,
              target: e.linkpath,
            },
          );
        }
        entries.push({ kind: 'symlink', path: e.path, target: e.linkpath });
        break;
      }
      case 'Link': {
        // Hard-link names are relative to the archive root.
        const name = e.linkpath.replace(/^(\.\/)+/, '');
        const source = name.startsWith(prefix) ? fileData.get(name.slice(prefix.length)) : undefined;
        if (!safeRelativePath(name) || !source) {
          throw packageInvalid(
            'link_escapes',
            `The hard link '${e.path}' does not name a file of the package`,
            {
              entry: e.path,
              target: e.linkpath,
            },
          );
        }
        entries.push({
          kind: 'file',
          path: e.path,
          data: source.data,
          executable: (source.mode & 0o111) !== 0,
        });
        break;
      }
      default:
        throw packageInvalid(
          'unsupported_entry',
          `The entry '${e.path}' is a ${e.type}, which a package may not hold`,
          {
            entry: e.path,
            type: e.type,
          },
        );
    }
  }
  const manifest = entries.find((e) => e.kind === 'file' && e.path === 'plugin.json');
  if (manifest?.kind !== 'file') {
    throw packageInvalid('manifest_missing', 'The package has no plugin.json at its root');
  }
  return { entries, manifest: manifest.data };
}

/** Writes validated content into `dir` (a fresh folder); files are created, never written through a link. */
export async function writeContent(content: ArchiveContent, dir: string): Promise<void> {
  await mkdir(dir, { recursive: true });
  for (const e of content.entries) {
    const target = join(dir, e.path);
    if (e.kind === 'dir') {
      await mkdir(target, { recursive: true });
    } else if (e.kind === 'file') {
      await mkdir(dirname(target), { recursive: true });
      await writeFile(target, e.data, { flag: 'wx', mode: e.executable ? 0o755 : 0o644 });
    } else {
      await mkdir(dirname(target), { recursive: true });
      await symlink(e.target, target);
    }
  }
}
