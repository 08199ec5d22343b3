import { randomBytes } from 'node:crypto';
import { mkdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import type { PlatformConfig } from '../config/config-schema.js';
import { AppError } from '../http/app-error.js';
import { folderRefusal } from '../kernel/folder-refusal.js';
import {
  type ArchiveContent,
  type ArchiveLimits,
  packageInvalid,
  readArchive,
  sha256Of,
  writeContent,
} from './plugin-archive.js';
import { type Manifest, parseManifest } from './plugin-manifest.js';

/** Written into every unpacked package folder: which archive it came from. */
const MARKER = '.platform-package.json';

/** A package read and validated, not yet placed. */
export interface PackageCandidate {
  manifest: Manifest;
  sha256: string;
  archive: Buffer;
  content: ArchiveContent;
}

export const archiveLimits = (cfg: PlatformConfig): ArchiveLimits => ({
  maxArchiveBytes: cfg.plugins.max_archive_bytes,
  maxEntries: cfg.plugins.max_archive_entries,
  maxEntryBytes: cfg.plugins.max_entry_bytes,
  maxUnpackedBytes: cfg.plugins.max_unpacked_bytes,
});

/**
 * Installed packages on disk: `<storage.data_dir>/plugins/<id>/<version>/`, each unpacked from its archive
 * (whose bytes the database also keeps, so an instance on another machine unpacks the same thing).
 */
export class PluginPackages {
  constructor(private readonly cfg: () => PlatformConfig) {}

  get root(): string {
    return resolve(this.cfg().storage.data_dir, 'plugins');
  }

  /** A plugin's own folder for files (`ctx.plugin.dataDir`), made when it is loaded. */
  async dataDir(id: string): Promise<string> {
    const dir = resolve(this.cfg().storage.data_dir, 'plugin-data', id);
    await mkdir(dir, { recursive: true });
    return dir;
  }

  async removeDataDir(id: string): Promise<void> {
    await rm(resolve(this.cfg().storage.data_dir, 'plugin-data', id), { recursive: true, force: true });
  }

  dir(id: string, version: string): string {
    return join(this.root, id, version);
  }

  /**
   * Reads an archive, verifies its sha256 when one is expected, and validates its content and manifest.
   * @throws AppError PLUGIN_PACKAGE_INVALID, VALIDATION_ERROR (manifest)
   */
  async read(archive: Buffer, expectedSha256?: string): Promise<PackageCandidate> {
    const sha256 = sha256Of(archive);
    if (expectedSha256 !== undefined && expectedSha256.toLowerCase() !== sha256) {
      throw packageInvalid('sha256_mismatch', 'The package does not match its published sha256', {
        expected: expectedSha256.toLowerCase(),
        actual: sha256,
      });
    }
    const content = await readArchive(archive, archiveLimits(this.cfg()));
    const manifest = parseManifest(content.manifest);
    const main = content.entries.find((e) => e.path === manifest.main);
    if (!main || main.kind === 'dir') {
      throw new AppError('VALIDATION_ERROR', `The package has no file '${manifest.main}' (manifest.main)`, {
        details: { field: 'manifest.main', reason: 'file not found in the package' },
      });
    }
    return { manifest, sha256, archive, content };
  }

  /** Unpacks a candidate into its folder, unless that folder already holds the same archive. */
  async place(candidate: PackageCandidate): Promise<string> {
    const { manifest, sha256 } = candidate;
    const target = this.dir(manifest.name, manifest.version);
    if ((await this.markerOf(target)) === sha256) return target;
    const staging = join(this.root, '.staging', `${manifest.name}-${randomBytes(6).toString('hex')}`);
    try {
      await writeContent(candidate.content, staging);
      // Plugins are ES modules: without a package.json of its own, a `.js` main would be read as CommonJS.
      if (!candidate.content.entries.some((e) => e.path === 'package.json')) {
        await writeFile(
          join(staging, 'package.json'),
          `${JSON.stringify({ type: 'module', private: true })}\n`,
        );
      }
      await writeFile(
        join(staging, MARKER),
        JSON.stringify({ sha256, unpacked_at: new Date().toISOString() }),
      );
      await mkdir(join(this.root, manifest.name), { recursive: true });
      await rm(target, { recursive: true, force: true });
      try {
        await rename(staging, target);
      } catch (err) {
        // Another instance on the same folder placed it at the same moment: fine if it is the same archive.
        if ((await this.markerOf(target)) !== sha256) throw err;
      }
    } catch (err) {
      if (err instanceof AppError) throw err;
      const refused = folderRefusal(err, 'plugin folder');
      if (refused) throw refused;
      throw packageInvalid('unpack_failed', `The package could not be unpacked: ${(err as Error).message}`);
    } finally {
      await rm(staging, { recursive: true, force: true });
    }
    return target;
  }

  /** The folder of an installed version, unpacked from `archive()` first when this machine does not have it. */
  async ensure(
    id: string,
    version: string,
    sha256: string,
    archive: () => Promise<Buffer | undefined>,
  ): Promise<string> {
    const target = this.dir(id, version);
    if ((await this.markerOf(target)) === sha256) return target;
    const bytes = await archive();
    if (!bytes) throw new Error(`the package archive of ${id}@${version} is not in the database`);
    return this.place(await this.read(bytes, sha256));
  }

  async exists(id: string, version: string): Promise<boolean> {
    return (await stat(this.dir(id, version)).catch(() => undefined))?.isDirectory() ?? false;
  }

  /** Removes one version's folder, or every version of the plugin. */
  async remove(id: string, version?: string): Promise<void> {
    await rm(version ? this.dir(id, version) : join(this.root, id), { recursive: true, force: true });
  }

  private async markerOf(dir: string): Promise<string | undefined> {
    try {
      return (JSON.parse(await readFile(join(dir, MARKER), 'utf8')) as { sha256?: string }).sha256;
    } catch {
      return undefined;
    }
  }
}
