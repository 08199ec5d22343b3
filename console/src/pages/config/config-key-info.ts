import { useEffect, useState } from 'preact/hooks';
import { loadDocument } from '../../api/operations.ts';

/** What the configuration schema says of one key: its meaning, and whether it applies only after a restart. */
export interface KeyInfo {
  description: string | undefined;
  restart: boolean;
}

interface SchemaNode {
  description?: string;
  properties?: Record<string, SchemaNode>;
  'x-restart'?: boolean;
}

/** Dotted key → its info, from the schema of `GET /api/v1/admin/config`'s `config` in the OpenAPI document. */
export function keyInfoFrom(doc: unknown): Map<string, KeyInfo> {
  const out = new Map<string, KeyInfo>();
  const d = doc as {
    paths?: Record<
      string,
      { get?: { responses?: Record<string, { content?: Record<string, { schema?: SchemaNode }> }> } }
    >;
  };
  const envelope =
    d.paths?.['/api/v1/admin/config']?.get?.responses?.['200']?.content?.['application/json']?.schema;
  const config = envelope?.properties?.['data']?.properties?.['config'];
  const walk = (node: SchemaNode, path: string[]) => {
    if (node.properties) {
      for (const [k, v] of Object.entries(node.properties)) walk(v, [...path, k]);
      return;
    }
    out.set(path.join('.'), { description: node.description, restart: node['x-restart'] === true });
  };
  if (config) walk(config, []);
  return out;
}

/** The keys' info, once the OpenAPI document is read (empty until then, or when it cannot be). */
export function useKeyInfo(): Map<string, KeyInfo> {
  const [info, setInfo] = useState<Map<string, KeyInfo>>(new Map());
  useEffect(() => {
    let live = true;
    void loadDocument().then((doc) => {
      if (live && doc) setInfo(keyInfoFrom(doc));
    });
    return () => {
      live = false;
    };
  }, []);
  return info;
}

/** "Applies at once. Port of …" — the hint shown under a key's control. */
export function keyHint(info: KeyInfo | undefined): string | undefined {
  if (!info) return undefined;
  const when = info.restart ? 'Applies after a restart.' : 'Applies at once.';
  return info.description ? `${when} ${info.description}` : when;
}
