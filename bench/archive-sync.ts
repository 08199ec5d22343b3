/**
 * The backup archive's file, written two ways with the same data: `fs.createWriteStream` (what the archive was
 * written with before) and `openSyncingFile` (a datasync every 8 MB off the loop, and one at the end). Prints,
 * for each round, the time until the stream finished, the most dirty page cache seen meanwhile (`Dirty:` of
 * /proc/meminfo, the whole machine's) and the longest lag of a 5 ms timer on the event loop. The data is
 * incompressible-looking JSON lines, in 64 KiB chunks (as the archive's gzip and tar stages hand them on).
 *
 *   npx tsx bench/archive-sync.ts [megabytes, default 256] [rounds, default 3]
 */
import { execSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createWriteStream, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { Readable, type Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { openSyncingFile } from '../src/backups/syncing-file-stream.js';

const megabytes = Number(process.argv[2] ?? 256);
const rounds = Number(process.argv[3] ?? 3);
// Next to the repository, on the disk the data folder would be on (a tmpfs /tmp would sync nothing).
const dir = mkdtempSync(join(process.cwd(), '.archive-sync-bench-'));
const chunk = Buffer.from(randomBytes(48 * 1024).toString('base64'));

const dirtyMb = () => Number(/Dirty:\s+(\d+)/.exec(readFileSync('/proc/meminfo', 'utf8'))?.[1] ?? 0) / 1024;

async function round(name: string, open: (file: string) => Promise<Writable>, n: number): Promise<void> {
  execSync('sync');
  const file = join(dir, `${name}-${n}`);
  let maxDirty = 0;
  let maxLag = 0;
  let last = performance.now();
  const timer = setInterval(() => {
    const now = performance.now();
    maxLag = Math.max(maxLag, now - last - 5);
    last = now;
    maxDirty = Math.max(maxDirty, dirtyMb());
  }, 5);
  const start = performance.now();
  const total = Math.ceil((megabytes * 1024 * 1024) / chunk.length);
  await pipeline(
    Readable.from(
      (function* () {
        for (let i = 0; i < total; i++) yield chunk;
      })(),
    ),
    await open(file),
  );
  const ms = performance.now() - start;
  clearInterval(timer);
  rmSync(file);
  console.log(
    `${name}: ${ms.toFixed(0)} ms for ${megabytes} MB, most dirty ${maxDirty.toFixed(0)} MB, longest loop lag ${maxLag.toFixed(1)} ms`,
  );
}

try {
  for (let n = 0; n < rounds; n++) {
    await round('createWriteStream', async (file) => createWriteStream(file, { flags: 'wx' }), n);
    await round('openSyncingFile', (file) => openSyncingFile(file, { flags: 'wx' }), n);
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
