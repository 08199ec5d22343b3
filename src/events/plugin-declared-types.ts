import type { CatalogueType } from './event-catalogue.js';
import type { PluginManifestRow } from './event-type-store.js';

interface ManifestTypes {
  events?: {
    types?: Record<string, { description?: string; schema?: Record<string, unknown>; examples?: unknown[] }>;
  };
}

/**
 * The types installed plugins declare with a schema, in the order the plugins were installed. The manifest was
 * checked at install (`parseManifest`), so its schemas compile.
 */
export function pluginDeclaredTypes(plugins: readonly PluginManifestRow[]): CatalogueType[] {
  const out: CatalogueType[] = [];
  for (const plugin of plugins) {
    const types = (JSON.parse(plugin.manifest) as ManifestTypes).events?.types ?? {};
    for (const [eventType, declared] of Object.entries(types)) {
      if (declared.schema === undefined) continue;
      out.push({
        eventType,
        description: declared.description ?? '',
        schema: declared.schema,
        examples: declared.examples ?? [],
        registeredBy: `plugin:${plugin.id}`,
        updatedBy: plugin.id,
        createdAt: plugin.installed_at,
        updatedAt: plugin.installed_at,
      });
    }
  }
  return out;
}
