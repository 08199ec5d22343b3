import fsp from 'node:fs/promises';
import { syncBuiltinESMExports } from 'node:module';

export interface ArchiveOpenHook {
  /** Runs just before the archive file is opened. */
  beforeOpen?: (path: string) => void;
  /** While it returns true, every write to an archive opened then fails with ENOSPC, as on a full disk. */
  diskFull?: () => boolean;
}

/**
 * Steps in where the platform opens a backup's archive (`….partial`, with `open` of `fs/promises`, imported by
 * name: `syncBuiltinESMExports` makes that binding follow the patched module). Returns what puts it back.
 */
export function hookArchiveOpen(hook: ArchiveOpenHook): () => void {
  const original = fsp.open;
  fsp.open = (async (path: Parameters<typeof original>[0], ...rest: [string?, number?]) => {
    if (!String(path).endsWith('.partial')) return original(path, ...rest);
    hook.beforeOpen?.(String(path));
    const handle = await original(path, ...rest);
    if (hook.diskFull?.()) {
      handle.write = (async () => {
        throw Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' });
      }) as typeof handle.write;
    }
    return handle;
  }) as typeof fsp.open;
  syncBuiltinESMExports();
  return () => {
    fsp.open = original;
    syncBuiltinESMExports();
  };
}
