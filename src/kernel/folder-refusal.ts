import { AppError } from '../http/app-error.js';

/** File-system refusals that are the disk's state, not a bug: full, over quota, read-only, not writable, failing. */
const CAUSES: Record<string, string> = {
  ENOSPC: 'no space left on the device',
  EDQUOT: 'the disk quota is exhausted',
  EROFS: 'the file system is read-only',
  EACCES: 'permission denied',
  EPERM: 'permission denied',
  EIO: 'an input/output error',
};

/**
 * A write the data folder refused (full, read-only, …) as 503 SERVICE_UNAVAILABLE with Retry-After, as a database
 * that cannot store a change answers, naming the folder and the cause for the operator; `undefined` for any
 * other error.
 */
export function folderRefusal(err: unknown, folder: string): AppError | undefined {
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  const cause = typeof code === 'string' ? CAUSES[code] : undefined;
  if (!cause || err instanceof AppError) return undefined;
  return new AppError('SERVICE_UNAVAILABLE', `The ${folder} cannot be written (${cause}); retry once fixed`, {
    headers: { 'retry-after': '5' },
  });
}
