import type { JsonSchema } from '../../components/schema-form.tsx';

export interface PluginItem {
  id: string;
  name: string;
  version: string;
  description: string;
  author: string;
  status: string;
  enabled: boolean;
  health: string;
  load_order?: number;
  dependencies?: string[];
  permissions?: string[];
  events?: string[] | { emits?: string[]; subscribes?: string[] };
  installed_at?: string;
  last_updated?: string;
}

export interface PluginDetail {
  id: string;
  manifest?: {
    name: string;
    version: string;
    description?: string;
    author?: string;
    license?: string;
    platform_version?: string;
    config_schema?: JsonSchema;
  };
  status: string;
  health: string;
  enabled?: boolean;
  configuration?: Record<string, unknown>;
  config_schema?: JsonSchema;
  metrics?: Record<string, number>;
  logs?: { timestamp: string; level: string; message: string }[];
}

export interface AvailablePlugin {
  name: string;
  description?: string;
  versions?: string[];
  latest_version?: string;
  installed_version?: string | null;
}

/** The first array in an answer (`{plugins: [...]}` or `{available: [...]}`), for lists whose key the spec leaves open. */
export function firstArray<T>(d: unknown): T[] {
  if (Array.isArray(d)) return d as T[];
  if (d && typeof d === 'object') {
    for (const v of Object.values(d)) if (Array.isArray(v)) return v as T[];
  }
  return [];
}
