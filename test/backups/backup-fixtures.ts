import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { gzipSync } from 'node:zlib';
import { create, Header, Parser, type ReadEntry, type TarOptionsWithAliasesAsyncNoFile } from 'tar';
import { expect } from 'vitest';
import { BackupService } from '../../src/backups/backup-service.js';
import { newId } from '../../src/kernel/new-id.js';
import { eventually } from '../helpers/eventually.js';
import type { TestPlatform } from '../helpers/test-platform.js';

export const backupFolder = (t: TestPlatform) =>
  resolve(t.platform.context.cfg().storage.data_dir, 'backups');

/** The entries of a tar or tar.gz archive (not encrypted) as text, by path. */
export async function readArchive(bytes: Buffer): Promise<Map<string, string>> {
  const files = new Map<string, string>();
  await new Promise<void>((done, fail) => {
    const parser = new Parser({
      onReadEntry: (entry: ReadEntry) => {
        if (entry.type !== 'File') return entry.resume();
        const chunks: Buffer[] = [];
        entry.on('data', (c: Buffer) => chunks.push(c));
        entry.on('end', () => files.set(entry.path, Buffer.concat(chunks).toString('utf8')));
      },
    });
    parser.on('end', () => done());
    parser.on('error', fail);
    parser.end(bytes);
  });
  return files;
}

/** Polls the task (a restore's id is its task id) until it is no longer running. */
export async function settledTask(t: TestPlatform, token: string, id: string): Promise<any> {
  let task: any;
  const ok = await eventually(async () => {
    const res = await t.request('GET', `/api/v1/tasks/${id}`, { token });
    task = res.data?.data;
    return res.statusCode === 200 && task.status !== 'running';
  }, 30_000);
  expect(ok, `task ${id} still running: ${JSON.stringify(task)}`).toBe(true);
  return task;
}

export const sha256 = (bytes: Buffer | string) => createHash('sha256').update(bytes).digest('hex');

/**
 * Writes an archive of our own making into the backup folder and adds it to the catalogue as a completed
 * backup, the way a file replaced on disk would look to the platform. `fill` writes the files into the staged
 * folder; `entries` (default: everything in it) and `tarOptions` shape the archive (links, `../` paths …).
 */
export async function plantArchive(
  t: TestPlatform,
  fill: (dir: string, id: string) => void | Promise<void>,
  options: { pack?: (dir: string) => Promise<Buffer> } = {},
): Promise<string> {
  const id = newId('bkp');
  const dir = mkdtempSync(join(tmpdir(), 'planted-'));
  try {
    await fill(dir, id);
    const bytes = options.pack ? await options.pack(dir) : await packTar({ cwd: dir }, readdirSync(dir));
    const fileName = `${id}.tar.gz`;
    mkdirSync(backupFolder(t), { recursive: true });
    writeFileSync(join(backupFolder(t), fileName), bytes);
    await t.platform.context.database.db
      .insertInto('backups')
      .values({
        id,
        name: 'planted',
        type: 'manual',
        status: 'completed',
        includes: JSON.stringify(['configuration', 'database', 'plugins']),
        file_name: fileName,
        size_bytes: bytes.length,
        compression: 1,
        encryption: 0,
        sha256: sha256(bytes),
        duration_ms: 1,
        created_at: new Date().toISOString(),
        completed_at: new Date().toISOString(),
        created_by: 'test',
        error: null,
      })
      .execute();
    return id;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** A gzipped tar of `entries` built by the tar package with the given options (links, `../`, absolute paths …). */
export async function packTar(options: TarOptionsWithAliasesAsyncNoFile, entries: string[]): Promise<Buffer> {
  const pack = create({ gzip: true, portable: true, ...options }, entries);
  const chunks: Buffer[] = [];
  for await (const chunk of pack as AsyncIterable<Buffer>) chunks.push(chunk);
  return Buffer.concat(chunks);
}

/**
 * A gzipped tar written header by header, for entries the tar package cannot be trusted to pack: with a hard
 * link in the folder, tar 7.5's packer can end its gzip stream twice (a Z_STREAM_ERROR thrown after the pack
 * has finished), so hard links are planted this way.
 */
export function tarOf(entries: { path: string; type: 'File' | 'Link'; body?: string; linkpath?: string }[]) {
  const blocks: Buffer[] = [];
  for (const entry of entries) {
    const body = Buffer.from(entry.body ?? '');
    const header = Buffer.alloc(512);
    new Header({
      path: entry.path,
      type: entry.type,
      linkpath: entry.linkpath,
      size: body.length,
      mode: 0o644,
      mtime: new Date(0),
    }).encode(header, 0);
    blocks.push(header, body, Buffer.alloc((512 - (body.length % 512)) % 512));
  }
  blocks.push(Buffer.alloc(1024));
  return gzipSync(Buffer.concat(blocks));
}

/** A manifest for a planted archive, with the checksums of the files given (path → content). */
export async function manifestFor(
  t: TestPlatform,
  id: string,
  files: Record<string, string>,
  tables: Record<string, { rows: number; columns: string[] }> = {},
) {
  const migrations = await t.platform.context.database.db
    .selectFrom('platform_migrations' as never)
    .select('name' as never)
    .orderBy('name' as never)
    .execute();
  return {
    format: 'platform-backup/1',
    backup_id: id,
    name: 'planted',
    compression: true,
    platform_version: '0.1.0',
    schema_version: migrations.map((m) => (m as { name: string }).name),
    dialect: t.platform.context.database.dialect,
    includes: ['configuration', 'database', 'plugins'],
    skipped: {},
    created_at: new Date().toISOString(),
    tables,
    files: Object.fromEntries(
      Object.entries(files).map(([p, c]) => [p, { sha256: sha256(c), bytes: Buffer.byteLength(c) }]),
    ),
  };
}

/** Writes `files` (path → content) under `dir`. */
export function writeTree(dir: string, files: Record<string, string>): void {
  for (const [path, content] of Object.entries(files)) {
    mkdirSync(join(dir, path, '..'), { recursive: true });
    writeFileSync(join(dir, path), content);
  }
}

const backupService = (t: TestPlatform) => {
  const service = t.platform.context.registry.get('backups');
  if (!(service instanceof BackupService)) throw new Error('no backups service');
  return service;
};

const ORIGIN = { userId: null, username: 'test' };

/** A catalogue row of a failed backup, without a file. */
export const FAILED_BACKUP_ROW = {
  type: 'manual',
  status: 'failed',
  includes: '["database"]',
  size_bytes: 0,
  compression: 0,
  encryption: 0,
  sha256: '',
  duration_ms: 0,
  created_at: '2026-01-01T00:00:00.000Z',
  completed_at: '2026-01-01T00:00:00.000Z',
  created_by: 'test',
  error: 'filler',
};

/** Imports once no other backup work (the recovery pass of this test's short lease) holds the lock. */
export async function importWhenFree(t: TestPlatform, source: string) {
  for (let i = 0; ; i++) {
    try {
      return await backupService(t).importArchive(source, ORIGIN);
    } catch (err) {
      if ((err as { code?: string }).code !== 'BACKUP_IN_PROGRESS' || i > 50) throw err;
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}

/**
 * A backup made through the API (all components); answers its id. Asked again while other backup work (a
 * recovery pass of a short lock lease) holds the lock: 409 BACKUP_IN_PROGRESS is the answer meanwhile.
 */
export async function createManualBackup(t: TestPlatform, token: string): Promise<string> {
  for (let i = 0; ; i++) {
    const res = await t.request('POST', '/api/v1/backup', { token, body: {} });
    if (res.statusCode === 409 && res.data.error.code === 'BACKUP_IN_PROGRESS' && i < 50) {
      await new Promise((r) => setTimeout(r, 100));
      continue;
    }
    expect(res.statusCode).toBe(201);
    const id = res.data.data.backup_id as string;
    expect((await backupWritten(t, token, id)).status).toBe('completed');
    return id;
  }
}

/**
 * Waits for the task writing a backup (its id is the backup id) to end; answers the backup as
 * `GET /api/v1/backup` then lists it (`completed` or `failed`).
 */
export async function backupWritten(t: TestPlatform, token: string, id: string): Promise<any> {
  await settledTask(t, token, id);
  return listedBackup(t, token, id);
}

/** The backup of that id as `GET /api/v1/backup` lists it, or undefined. */
export async function listedBackup(t: TestPlatform, token: string, id: string): Promise<any> {
  const res = await t.request('GET', '/api/v1/backup', { token });
  return (res.data.data.backups as any[]).find((b) => b.id === id);
}
