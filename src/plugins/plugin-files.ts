import { appendFile, lstat, mkdir, readFile, realpath, rm, writeFile } from 'node:fs/promises';
import { dirname, isAbsolute, relative, resolve, sep } from 'node:path';

/** The most one `ctx.files` write or append may carry, and the largest file `ctx.files.read` returns. */
export const PLUGIN_FILE_LIMIT_BYTES = 16 * 1024 * 1024;

/** A `ctx.files` path refused: it is not a path inside the plugin's data folder. */
export class FileOutsideError extends Error {
  constructor(path: string, why: string) {
    super(`ctx.files: '${path}' ${why}; a plugin's files stay inside its own data folder`);
    this.name = 'FileOutsideError';
  }
}

const exists = (path: string) =>
  lstat(path).then(
    () => true,
    () => false,
  );

const inside = (root: string, target: string) => {
  const rel = relative(root, target);
  return rel !== '' && !rel.startsWith(`..${sep}`) && rel !== '..' && !isAbsolute(rel);
};

/**
 * The platform side of `ctx.files`: every path is relative to the plugin's data folder and must stay inside
 * it, by its text (no absolute path, no `..` out) and on disk (no symbolic link inside the folder leading out,
 * and the file itself is never a link). Refusals throw FileOutsideError, whose message names the path as the
 * plugin gave it, never a server path.
 */
export class PluginFiles {
  constructor(private readonly dataDir: string) {}

  async read(path: unknown): Promise<string> {
    const file = await this.resolve(path, false);
    const size = (await lstat(file)).size;
    if (size > PLUGIN_FILE_LIMIT_BYTES)
      throw new Error(`ctx.files.read: '${String(path)}' exceeds ${PLUGIN_FILE_LIMIT_BYTES} bytes`);
    return readFile(file, 'utf8');
  }

  async write(path: unknown, data: unknown, append: boolean): Promise<void> {
    if (typeof data !== 'string') throw new TypeError('ctx.files: the data must be a string');
    if (Buffer.byteLength(data) > PLUGIN_FILE_LIMIT_BYTES)
      throw new Error(`ctx.files: one write may carry at most ${PLUGIN_FILE_LIMIT_BYTES} bytes`);
    const file = await this.resolve(path, true);
    await (append ? appendFile(file, data) : writeFile(file, data));
  }

  async delete(path: unknown): Promise<boolean> {
    const file = await this.resolve(path, false).catch((err: unknown) => {
      if ((err as { code?: string }).code === 'ENOENT') return undefined;
      throw err;
    });
    if (file === undefined) return false;
    await rm(file, { force: true });
    return true;
  }

  private async resolve(path: unknown, create: boolean): Promise<string> {
    if (typeof path !== 'string' || path.length === 0 || path.length > 1024 || path.includes('\0'))
      throw new TypeError('ctx.files: a path is a non-empty string of at most 1024 characters');
    if (isAbsolute(path)) throw new FileOutsideError(path, 'is an absolute path');
    const root = resolve(this.dataDir);
    const target = resolve(root, path);
    if (!inside(root, target)) throw new FileOutsideError(path, 'leaves the data folder');
    await mkdir(root, { recursive: true });
    const realRoot = await realpath(root);
    // The folder the file is in, with every link resolved, must still be inside (a link could lead out):
    // checked on the deepest folder that exists before any is made, and again once they are.
    const within = async (folder: string) => {
      const real = await realpath(folder);
      if (real !== realRoot && !inside(realRoot, real))
        throw new FileOutsideError(path, 'passes through a link leading out of the data folder');
    };
    let existing = dirname(target);
    while (existing !== root && !(await exists(existing))) existing = dirname(existing);
    await within(existing);
    if (create) await mkdir(dirname(target), { recursive: true });
    await within(dirname(target));
    const stat = await lstat(target).catch((err: unknown) => {
      if ((err as { code?: string }).code === 'ENOENT' && create) return undefined;
      throw err;
    });
    if (stat?.isSymbolicLink()) throw new FileOutsideError(path, 'is a symbolic link');
    if (stat?.isDirectory()) throw new Error(`ctx.files: '${path}' is a folder`);
    return target;
  }
}
