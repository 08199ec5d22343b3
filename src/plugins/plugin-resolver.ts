import semver from 'semver';
import { AppError } from '../http/app-error.js';
import type { Manifest } from './plugin-manifest.js';

/** What the resolver needs of an installed plugin. */
export interface InstalledPlugin {
  id: string;
  version: string;
  enabled: boolean;
  manifest: Pick<Manifest, 'dependencies'>;
}

const dependencyError = (message: string, details: Record<string, unknown>) =>
  new AppError('PLUGIN_DEPENDENCY_ERROR', message, { details });

/** @throws AppError PLUGIN_DEPENDENCY_ERROR when the platform's version is outside `platform_version` */
export function checkPlatformVersion(
  manifest: Pick<Manifest, 'name' | 'platform_version'>,
  platformVersion: string,
): void {
  if (semver.satisfies(platformVersion, manifest.platform_version, { includePrerelease: true })) return;
  throw dependencyError(
    `${manifest.name} needs platform version ${manifest.platform_version}; this platform is ${platformVersion}`,
    {
      plugin: manifest.name,
      platform_version: { required: manifest.platform_version, actual: platformVersion },
    },
  );
}

/**
 * Checks a plugin's dependencies against what is installed: each must be installed in a version inside its
 * range, and enabled when `requireEnabled` (the plugin is about to run).
 *
 * @throws AppError PLUGIN_DEPENDENCY_ERROR with `details.missing`, `details.incompatible`, `details.disabled`
 */
export function checkDependencies(
  manifest: Pick<Manifest, 'name' | 'dependencies'>,
  installed: ReadonlyMap<string, InstalledPlugin>,
  requireEnabled: boolean,
): void {
  const missing: string[] = [];
  const incompatible: { name: string; required: string; installed: string }[] = [];
  const disabled: string[] = [];
  for (const [name, range] of Object.entries(manifest.dependencies)) {
    const dep = installed.get(name);
    if (!dep) missing.push(name);
    else if (!semver.satisfies(dep.version, range, { includePrerelease: true })) {
      incompatible.push({ name, required: range, installed: dep.version });
    } else if (requireEnabled && !dep.enabled) disabled.push(name);
  }
  if (missing.length + incompatible.length + disabled.length === 0) return;
  const parts = [
    missing.length > 0 ? `missing: ${missing.join(', ')}` : '',
    incompatible.length > 0
      ? `incompatible: ${incompatible.map((i) => `${i.name} ${i.installed} (needs ${i.required})`).join(', ')}`
      : '',
    disabled.length > 0 ? `not enabled: ${disabled.join(', ')}` : '',
  ].filter(Boolean);
  throw dependencyError(`${manifest.name} has unmet dependencies (${parts.join('; ')})`, {
    plugin: manifest.name,
    missing,
    incompatible,
    disabled,
    dependencies: [...missing, ...incompatible.map((i) => i.name), ...disabled],
  });
}

/**
 * Checks that `manifest`, in place of the installed plugin of the same name, makes no dependency cycle: a plugin
 * loads after the plugins it depends on, which a cycle makes impossible (and then each plugin of the cycle
 * blocks disabling or uninstalling the other).
 *
 * @throws AppError PLUGIN_DEPENDENCY_ERROR with `details.reason: "dependency_cycle"` and `details.cycle`, the
 * plugins of the cycle in dependency order from `manifest.name` back to it
 */
export function checkNoCycle(
  manifest: Pick<Manifest, 'name' | 'dependencies'>,
  installed: ReadonlyMap<string, InstalledPlugin>,
): void {
  const dependenciesOf = (id: string) =>
    Object.keys(
      id === manifest.name ? manifest.dependencies : (installed.get(id)?.manifest.dependencies ?? {}),
    )
      .filter((d) => d === manifest.name || installed.has(d))
      .sort();
  const seen = new Set<string>();
  const path: string[] = [manifest.name];
  const find = (id: string): boolean => {
    for (const dep of dependenciesOf(id)) {
      if (dep === manifest.name) return true;
      if (seen.has(dep)) continue;
      seen.add(dep);
      path.push(dep);
      if (find(dep)) return true;
      path.pop();
    }
    return false;
  };
  if (!find(manifest.name)) return;
  const cycle = [...path, manifest.name];
  throw dependencyError(
    `${manifest.name} would make a dependency cycle (${cycle.join(' → ')}): a plugin loads after the plugins ` +
      'it depends on, so plugins cannot depend on each other in a circle',
    { plugin: manifest.name, reason: 'dependency_cycle', cycle, dependencies: cycle.slice(1, -1) },
  );
}

/** Enabled plugins that depend on `id`. */
export function enabledDependents(id: string, installed: Iterable<InstalledPlugin>): string[] {
  return [...installed]
    .filter((p) => p.enabled && p.id !== id && id in p.manifest.dependencies)
    .map((p) => p.id)
    .sort();
}

/**
 * @throws AppError PLUGIN_DEPENDENCY_ERROR naming the enabled plugins that depend on `id` (disable, uninstall)
 */
export function checkNoDependents(id: string, installed: Iterable<InstalledPlugin>, action: string): void {
  const dependents = enabledDependents(id, installed);
  if (dependents.length === 0) return;
  throw dependencyError(
    `${id} cannot be ${action}: enabled plugins depend on it (${dependents.join(', ')})`,
    {
      plugin: id,
      dependents,
    },
  );
}

/**
 * Position (1-based) of every plugin in load order: a plugin comes after the installed plugins it depends on,
 * and among those whose dependencies are all placed the name decides (the smallest topological order by name).
 * A dependency cycle is broken by placing the first name of what remains.
 */
export function loadOrder(installed: Iterable<InstalledPlugin>): Map<string, number> {
  const byId = new Map([...installed].map((p) => [p.id, p]));
  const order = new Map<string, number>();
  const waitsOn = (id: string) =>
    Object.keys(byId.get(id)?.manifest.dependencies ?? {}).filter((d) => byId.has(d) && !order.has(d));
  const remaining = [...byId.keys()].sort();
  while (remaining.length > 0) {
    const ready = remaining.findIndex((id) => waitsOn(id).length === 0);
    for (const next of remaining.splice(ready === -1 ? 0 : ready, 1)) order.set(next, order.size + 1);
  }
  return order;
}
