export type Tree = Record<string, unknown>;

const isObject = (v: unknown): v is Tree => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * The keys of `edited` whose value differs from `original`, as a nested object (what PUT /api/v1/config takes),
 * or undefined when nothing changed.
 */
export function diffTree(original: Tree, edited: Tree): Tree | undefined {
  const out: Tree = {};
  for (const [k, v] of Object.entries(edited)) {
    const before = original[k];
    if (isObject(v) && isObject(before)) {
      const inner = diffTree(before, v);
      if (inner) out[k] = inner;
    } else if (JSON.stringify(v) !== JSON.stringify(before)) out[k] = v;
  }
  return Object.keys(out).length > 0 ? out : undefined;
}
