import { leafKeys } from './config-schema.js';
import { type ConfigTree, flattenTree, unflatten } from './config-tree.js';

export const SECRET_MASK = '********';

const SECRET_KEYS = new Set(
  leafKeys()
    .filter((k) => k.secret)
    .map((k) => k.path),
);
const RESTART_KEYS = new Set(
  leafKeys()
    .filter((k) => k.restart)
    .map((k) => k.path),
);

export const isSecretKey = (path: string): boolean => SECRET_KEYS.has(path);
export const isRestartKey = (path: string): boolean => RESTART_KEYS.has(path);

/** A copy of the tree with every secret that has a value shown as the mask. */
export function maskSecrets(tree: ConfigTree): ConfigTree {
  const flat = flattenTree(tree);
  for (const key of Object.keys(flat)) {
    if (SECRET_KEYS.has(key) && flat[key] !== '' && flat[key] !== undefined) flat[key] = SECRET_MASK;
  }
  return unflatten(flat);
}
