import { AppError } from '../http/app-error.js';
import type { Manifest } from './plugin-manifest.js';
import type { PackageCandidate, PluginPackages } from './plugin-packages.js';
import type { PluginRepositories } from './plugin-repositories.js';

/** What an install asks for: a repository name and version, or an uploaded archive. */
export interface InstallInput {
  source: 'repository' | 'file';
  /** The package bytes of a `file` install. */
  archive?: Buffer;
  /** The sha256 an uploaded file must match (optional). */
  sha256?: string | undefined;
  fileName?: string;
  name?: string;
  version?: string;
  config?: Record<string, unknown>;
  enabled?: boolean;
}

/**
 * Reads the package an install names, validated: the uploaded archive, or the version a repository offers
 * (which must be the package it claims to be). Resolves with where it came from, for the record.
 */
export async function readInstallPackage(
  input: InstallInput,
  deps: { packages: PluginPackages; repositories: PluginRepositories },
): Promise<{ candidate: PackageCandidate; ref: string }> {
  if (input.source === 'file') {
    if (!input.archive) {
      throw new AppError('VALIDATION_ERROR', 'A file install needs the package in the field `file`', {
        details: { field: 'file', reason: 'is required' },
      });
    }
    return {
      candidate: await deps.packages.read(input.archive, input.sha256),
      ref: input.fileName ?? 'upload',
    };
  }
  const name = input.name;
  if (!name) {
    throw new AppError('VALIDATION_ERROR', 'plugin_name is required for a repository install', {
      details: { field: 'plugin_name', reason: 'is required' },
    });
  }
  const fetched = await deps.repositories.fetch(name, input.version ?? 'latest');
  const candidate = await deps.packages.read(fetched.archive, fetched.sha256);
  if (candidate.manifest.name !== name || candidate.manifest.version !== fetched.version) {
    throw new AppError(
      'PLUGIN_PACKAGE_INVALID',
      `The repository's package is ${candidate.manifest.name}@${candidate.manifest.version}, not ${name}@${fetched.version}`,
      { details: { reason: 'manifest_mismatch', expected: `${name}@${fetched.version}` } },
    );
  }
  return { candidate, ref: fetched.ref };
}

/**
 * Whether to enable at once: the body's `enabled`, else `config.enabled` when the plugin's own configuration
 * has no such key (the example of the interface, `config: {enabled: true}`), else yes.
 */
export function splitEnabled(
  manifest: Manifest,
  input: Pick<InstallInput, 'config' | 'enabled'>,
): { enabled: boolean; config: Record<string, unknown> } {
  const config = { ...(input.config ?? {}) };
  const ownKey = Object.hasOwn((manifest.config_schema['properties'] as object | undefined) ?? {}, 'enabled');
  let enabled = input.enabled;
  if (!ownKey && 'enabled' in config) {
    if (enabled === undefined && typeof config['enabled'] === 'boolean') enabled = config['enabled'];
    delete config['enabled'];
  }
  return { enabled: enabled ?? true, config };
}
