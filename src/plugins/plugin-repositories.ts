import { readdir, readFile, stat } from 'node:fs/promises';
import { isAbsolute, join, resolve } from 'node:path';
import semver from 'semver';
import type { PlatformConfig } from '../config/config-schema.js';
import { AppError, notFound } from '../http/app-error.js';
import { PROJECT_ROOT } from '../system/platform-info.js';
import { packageInvalid, readArchive } from './plugin-archive.js';
import { parseManifest } from './plugin-manifest.js';
import { packFolder } from './plugin-pack.js';

/** Where one offered version comes from. */
type Origin =
  | { kind: 'folder'; repository: string; path: string }
  | { kind: 'file'; repository: string; path: string; sha256: string | undefined }
  | { kind: 'http'; repository: string; url: string; sha256: string };

export interface OfferedPlugin {
  name: string;
  description: string;
  /** Newest first. */
  versions: string[];
  origins: Map<string, Origin>;
}

/** A package fetched from a repository, with the sha256 it must match (none for a local folder). */
export interface FetchedPackage {
  archive: Buffer;
  sha256: string | undefined;
  version: string;
  /** The repository entry it came from, for the record. */
  ref: string;
}

const isUrl = (entry: string) => /^https?:\/\//i.test(entry);

/**
 * The plugin repositories of `plugins.repositories`, in order: local folders (holding plugin folders and
 * `.tgz` files, a `<file>.sha256` beside a `.tgz` is checked) and HTTP indexes
 * `{plugins: {name: {description?, versions: {version: {url, sha256}}}}}`. A relative folder is resolved
 * against the installation folder, so the default `./plugins` is the bundled first-party plugins.
 */
export class PluginRepositories {
  constructor(private readonly cfg: () => PlatformConfig) {}

  /** Everything the repositories offer; where two offer the same version, the first repository wins. */
  async available(): Promise<Map<string, OfferedPlugin>> {
    const offered = new Map<string, OfferedPlugin>();
    for (const entry of this.cfg().plugins.repositories) {
      const found = isUrl(entry) ? await this.fromIndex(entry) : await this.fromFolder(entry);
      for (const { name, description, version, origin } of found) {
        const plugin: OfferedPlugin = offered.get(name) ?? {
          name,
          description,
          versions: [],
          origins: new Map(),
        };
        if (!plugin.origins.has(version)) {
          plugin.origins.set(version, origin);
          plugin.versions.push(version);
        }
        if (!plugin.description) plugin.description = description;
        offered.set(name, plugin);
      }
    }
    for (const p of offered.values()) p.versions.sort(semver.rcompare);
    return offered;
  }

  /**
   * Fetches a version (`latest`: the highest that is not a prerelease, else the highest) of a plugin.
   * @throws AppError RESOURCE_NOT_FOUND when no repository offers it
   */
  async fetch(name: string, version: string): Promise<FetchedPackage> {
    const plugin = (await this.available()).get(name);
    if (!plugin) throw notFound('plugin in the repositories', name);
    const chosen =
      version === 'latest'
        ? (plugin.versions.find((v) => !semver.prerelease(v)) ?? plugin.versions[0])
        : version;
    const origin = chosen === undefined ? undefined : plugin.origins.get(chosen);
    if (!origin || chosen === undefined) {
      throw new AppError('RESOURCE_NOT_FOUND', `No repository offers ${name}@${version}`, {
        details: { resource: 'plugin version', id: `${name}@${version}`, available: plugin.versions },
      });
    }
    switch (origin.kind) {
      case 'folder': {
        const packed = await packFolder(origin.path);
        return { archive: packed.archive, sha256: undefined, version: chosen, ref: origin.repository };
      }
      case 'file':
        return {
          archive: await readFile(origin.path),
          sha256: origin.sha256,
          version: chosen,
          ref: origin.repository,
        };
      case 'http':
        return {
          archive: await this.download(origin.url),
          sha256: origin.sha256,
          version: chosen,
          ref: origin.repository,
        };
    }
  }

  private async fromFolder(entry: string) {
    const dir = isAbsolute(entry) ? entry : resolve(PROJECT_ROOT, entry);
    const out: { name: string; description: string; version: string; origin: Origin }[] = [];
    const names = await readdir(dir).catch(() => [] as string[]);
    for (const name of names.sort()) {
      const path = join(dir, name);
      try {
        const info = await stat(path);
        if (info.isDirectory()) {
          const m = parseManifest(await readFile(join(path, 'plugin.json')));
          out.push({
            name: m.name,
            description: m.description,
            version: m.version,
            origin: { kind: 'folder', repository: entry, path },
          });
        } else if (name.endsWith('.tgz')) {
          const bytes = await readFile(path);
          const content = await readArchive(bytes, {
            maxArchiveBytes: this.cfg().plugins.max_archive_bytes,
            maxEntries: this.cfg().plugins.max_archive_entries,
            maxEntryBytes: this.cfg().plugins.max_entry_bytes,
            maxUnpackedBytes: this.cfg().plugins.max_unpacked_bytes,
          });
          const m = parseManifest(content.manifest);
          const sidecar = await readFile(`${path}.sha256`, 'utf8').catch(() => undefined);
          const sha256 = sidecar?.trim().split(/\s+/)[0]?.toLowerCase();
          out.push({
            name: m.name,
            description: m.description,
            version: m.version,
            origin: { kind: 'file', repository: entry, path, sha256 },
          });
        }
      } catch {
        // Something in the folder that is not a valid package is not offered (installing it would fail anyway).
      }
    }
    return out;
  }

  private async fromIndex(url: string) {
    let index: unknown;
    try {
      const res = await fetch(url, {
        signal: AbortSignal.timeout(this.cfg().plugins.repository_timeout_seconds * 1000),
      });
      if (!res.ok) throw new Error(`HTTP ${res.status}`);
      index = await res.json();
    } catch (err) {
      throw new AppError(
        'SERVICE_UNAVAILABLE',
        `The plugin repository ${url} did not answer: ${(err as Error).message}`,
        {
          details: { repository: url },
          headers: { 'retry-after': '5' },
        },
      );
    }
    const out: { name: string; description: string; version: string; origin: Origin }[] = [];
    const plugins = (index as { plugins?: unknown } | null)?.plugins;
    if (!plugins || typeof plugins !== 'object') return out;
    for (const [name, value] of Object.entries(plugins as Record<string, unknown>)) {
      const p = value as { description?: unknown; versions?: unknown };
      if (!p || typeof p.versions !== 'object' || p.versions === null) continue;
      for (const [version, v] of Object.entries(p.versions as Record<string, unknown>)) {
        const spec = v as { url?: unknown; sha256?: unknown };
        if (!semver.valid(version) || typeof spec?.url !== 'string' || typeof spec.sha256 !== 'string')
          continue;
        out.push({
          name,
          description: typeof p.description === 'string' ? p.description : '',
          version,
          origin: { kind: 'http', repository: url, url: new URL(spec.url, url).href, sha256: spec.sha256 },
        });
      }
    }
    return out;
  }

  private async download(url: string): Promise<Buffer> {
    const limit = this.cfg().plugins.max_archive_bytes;
    let res: Response;
    try {
      res = await fetch(url, {
        signal: AbortSignal.timeout(this.cfg().plugins.repository_timeout_seconds * 1000),
      });
    } catch (err) {
      throw new AppError(
        'SERVICE_UNAVAILABLE',
        `The package ${url} could not be downloaded: ${(err as Error).message}`,
        {
          details: { url },
          headers: { 'retry-after': '5' },
        },
      );
    }
    if (!res.ok || !res.body) {
      throw new AppError(
        'SERVICE_UNAVAILABLE',
        `The package ${url} could not be downloaded: HTTP ${res.status}`,
        {
          details: { url, status: res.status },
          headers: { 'retry-after': '5' },
        },
      );
    }
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of res.body as AsyncIterable<Uint8Array>) {
      size += chunk.length;
      if (size > limit)
        throw packageInvalid('archive_too_large', `The archive exceeds ${limit} bytes`, { limit });
      chunks.push(Buffer.from(chunk));
    }
    return Buffer.concat(chunks);
  }
}
