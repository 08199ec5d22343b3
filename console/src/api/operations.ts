import { useEffect, useState } from 'preact/hooks';

export interface OpenApiDocument {
  paths?: Record<string, Record<string, unknown>>;
}

let loading: Promise<Set<string> | null> | undefined;
let documentLoading: Promise<OpenApiDocument | null> | undefined;

/** The platform's own OpenAPI document (public), read once; null when it cannot be read. */
export function loadDocument(): Promise<OpenApiDocument | null> {
  documentLoading ??= fetch('/openapi.json')
    .then((res) => (res.ok ? (res.json() as Promise<OpenApiDocument>) : null))
    .catch(() => null);
  return documentLoading;
}

/** `/api/v1/users/{user_id}` and `/api/v1/users/{id}` name the same operation. */
const normalise = (method: string, path: string) =>
  `${method.toUpperCase()} ${path.replace(/\{[^}]*\}/g, '{}')}`;

/**
 * The operations this platform offers, read once from its own OpenAPI document (public). Forms use it to say
 * "not available" before anyone fills them in; null when the document cannot be read (then every form shows).
 */
export function loadOperations(): Promise<Set<string> | null> {
  loading ??= loadDocument()
    .then((doc) => {
      if (!doc?.paths) return null;
      const ops = new Set<string>();
      for (const [path, methods] of Object.entries(doc.paths)) {
        for (const method of Object.keys(methods)) ops.add(normalise(method, path));
      }
      return ops;
    })
    .catch(() => null);
  return loading;
}

/** Whether the platform offers `METHOD /path` (true until known otherwise, so nothing flickers away). */
export function useOperation(operation: string): boolean {
  const [available, setAvailable] = useState(true);
  useEffect(() => {
    let live = true;
    const [method = 'GET', path = ''] = operation.split(' ');
    void loadOperations().then((ops) => {
      if (live) setAvailable(ops === null || ops.has(normalise(method, path)));
    });
    return () => {
      live = false;
    };
  }, [operation]);
  return available;
}
