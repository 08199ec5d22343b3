/**
 * `data_filters` (decisions §4): each key is a dotted path into the event's `data`, each value the value
 * required there, or an array of accepted values. Values compare by their JSON form, so objects work too.
 */
export type DataPredicate = (data: unknown) => boolean;

const always: DataPredicate = () => true;

export function compileDataFilters(filters: Record<string, unknown> | undefined): DataPredicate {
  const entries = Object.entries(filters ?? {});
  if (entries.length === 0) return always;
  const checks = entries.map(([path, expected]) => {
    const parts = path.split('.');
    const accepted = new Set((Array.isArray(expected) ? expected : [expected]).map((v) => JSON.stringify(v)));
    return (data: unknown) => {
      let node: unknown = data;
      for (const part of parts) {
        if (typeof node !== 'object' || node === null || !Object.hasOwn(node, part)) return false;
        node = (node as Record<string, unknown>)[part];
      }
      return accepted.has(JSON.stringify(node));
    };
  });
  return (data) => checks.every((check) => check(data));
}
