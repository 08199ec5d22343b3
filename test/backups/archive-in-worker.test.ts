import { createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { archiveInWorker } from '../../src/backups/archive-in-worker.js';
import { writeArchive } from '../../src/backups/archive-writer.js';
import type { Manifest } from '../../src/backups/backup-manifest.js';
import { readArchive } from './backup-fixtures.js';

// A backup packs its archive in a worker thread (archive-writer-worker): the same file as packed on this
// thread, its errors with the same message and code, and an abort that stops it and leaves no file behind.
describe('the archive packed in a worker thread', { timeout: 60_000 }, () => {
  const dir = mkdtempSync(join(tmpdir(), 'archive-worker-'));
  const staging = join(dir, 'content');
  const manifest = { format: 1, backup_id: 'bkp_test', files: {} } as unknown as Manifest;
  const options = (file: string) => ({
    stagingDir: staging,
    manifest,
    folders: ['database'],
    file: join(dir, file),
    compression: true,
  });

  beforeAll(() => {
    mkdirSync(join(staging, 'database'), { recursive: true });
    const lines = Array.from({ length: 20_000 }, (_, i) => JSON.stringify({ id: i, body: `row ${i}` }));
    writeFileSync(join(staging, 'database/things.jsonl'), `${lines.join('\n')}\n`);
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('writes the archive this thread would, and answers its size and checksum', async () => {
    const inWorker = await archiveInWorker(options('w.tar.gz'));
    const here = await writeArchive(options('h.tar.gz'));
    const bytes = readFileSync(join(dir, 'w.tar.gz'));
    expect(inWorker).toEqual({
      bytes: bytes.length,
      sha256: createHash('sha256').update(bytes).digest('hex'),
    });
    expect(inWorker.bytes).toBe(here.bytes);
    const files = await readArchive(bytes);
    expect(files).toEqual(await readArchive(readFileSync(join(dir, 'h.tar.gz'))));
    expect(files.get('database/things.jsonl')).toBe(
      readFileSync(join(staging, 'database/things.jsonl'), 'utf8'),
    );
    expect(JSON.parse(files.get('manifest.json') ?? '{}')).toEqual(manifest);
    expect(existsSync(join(dir, 'w.tar.gz.partial'))).toBe(false);
  });

  it('fails with the error packing on this thread meets, message and code, and leaves no file', async () => {
    // The archive's folder does not exist.
    const missing = options('none/m.tar.gz');
    const here = await writeArchive(missing).catch((e: NodeJS.ErrnoException) => e);
    const inWorker = await archiveInWorker(missing).catch((e: NodeJS.ErrnoException) => e);
    expect(inWorker).toBeInstanceOf(Error);
    expect((inWorker as Error).message).toBe((here as Error).message);
    expect((inWorker as NodeJS.ErrnoException).code).toBe((here as NodeJS.ErrnoException).code);
    expect(existsSync(join(dir, 'none'))).toBe(false);
  });

  it('stops the worker when aborted, with the signal reason, and removes the partial file', async () => {
    // Incompressible, so the packing takes a while: the abort comes while it writes.
    writeFileSync(join(staging, 'database/large.bin'), randomBytes(64 * 1024 * 1024));
    const controller = new AbortController();
    const reason = new Error('task cancelled');
    const partial = join(dir, 'a.tar.gz.partial');
    const packing = archiveInWorker({ ...options('a.tar.gz'), signal: controller.signal }).catch(
      (e: unknown) => e,
    );
    const deadline = Date.now() + 20_000;
    while (!existsSync(partial) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
    controller.abort(reason);
    expect(await packing).toBe(reason);
    expect(existsSync(partial)).toBe(false);
    expect(existsSync(join(dir, 'a.tar.gz'))).toBe(false);
    await expect(archiveInWorker({ ...options('b.tar.gz'), signal: controller.signal })).rejects.toBe(reason);
    rmSync(join(staging, 'database/large.bin'), { force: true });
  });
});
