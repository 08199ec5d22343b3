import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { packFolder } from '../../src/plugins/plugin-pack.js';
import type { TestPlatform } from '../helpers/test-platform.js';

/** A fresh folder to use as a local plugin repository. */
export function tempRepository(): string {
  return mkdtempSync(join(tmpdir(), 'plugin-repo-'));
}

/**
 * Writes a plugin folder `<repo>/<folder>` with a plugin.json built from `manifest` (name, version and a
 * permissive platform_version filled in) and `index.js` holding `code`.
 */
export function writePlugin(
  repo: string,
  manifest: Record<string, unknown> & { name: string },
  code: string,
  folder = `${manifest.name}-${String(manifest['version'] ?? '1.0.0')}`,
): string {
  const dir = join(repo, folder);
  mkdirSync(dir, { recursive: true });
  writeFileSync(
    join(dir, 'plugin.json'),
    JSON.stringify({ version: '1.0.0', platform_version: '>=0.0.0', ...manifest }, null, 2),
  );
  writeFileSync(join(dir, 'index.js'), code);
  return dir;
}

export async function pack(dir: string): Promise<{ archive: Buffer; sha256: string }> {
  const { archive, sha256 } = await packFolder(dir);
  return { archive, sha256 };
}

/** Uploads a package as `multipart/form-data` to the admin install route. */
export function upload(
  t: TestPlatform,
  token: string,
  archive: Buffer,
  fields: Record<string, string> = { source: 'file' },
  fileField = 'file',
) {
  const boundary = `----plugin${Date.now()}`;
  const parts: Buffer[] = [];
  for (const [k, v] of Object.entries(fields)) {
    parts.push(Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${k}"\r\n\r\n${v}\r\n`));
  }
  parts.push(
    Buffer.from(
      `--${boundary}\r\nContent-Disposition: form-data; name="${fileField}"; filename="plugin.tgz"\r\n` +
        'Content-Type: application/gzip\r\n\r\n',
    ),
    archive,
    Buffer.from(`\r\n--${boundary}--\r\n`),
  );
  return t.platform.app
    .inject({
      method: 'POST',
      url: '/api/v1/admin/plugins/install',
      headers: {
        authorization: `Bearer ${token}`,
        'content-type': `multipart/form-data; boundary=${boundary}`,
      },
      payload: Buffer.concat(parts),
    })
    .then((res) => Object.assign(res, { data: res.json() as any }));
}

export interface RawEntry {
  name: string;
  /** ustar type flag: '0' file, '1' hard link, '2' symbolic link, '3' character device, '5' folder. */
  type?: '0' | '1' | '2' | '3' | '5';
  body?: string;
  linkname?: string;
}

/** A hand-made `.tgz`, for archives no well-behaved packer would produce (escaping paths, links, devices). */
export function rawTgz(entries: RawEntry[]): Buffer {
  const blocks: Buffer[] = [];
  for (const e of entries) {
    const body = Buffer.from(e.body ?? '');
    const header = Buffer.alloc(512);
    const field = (value: string, offset: number, length: number) =>
      header.write(value, offset, length, 'utf8');
    const octal = (n: number, offset: number, length: number) =>
      field(`${n.toString(8).padStart(length - 1, '0')}\0`, offset, length);
    field(e.name, 0, 100);
    octal(0o644, 100, 8);
    octal(0, 108, 8);
    octal(0, 116, 8);
    octal(e.type === undefined || e.type === '0' ? body.length : 0, 124, 12);
    octal(0, 136, 12);
    header.write('        ', 148, 8);
    field(e.type ?? '0', 156, 1);
    field(e.linkname ?? '', 157, 100);
    field('ustar\0', 257, 6);
    field('00', 263, 2);
    let sum = 0;
    for (const b of header) sum += b;
    field(`${sum.toString(8).padStart(6, '0')}\0 `, 148, 8);
    blocks.push(header);
    if (e.type === undefined || e.type === '0') {
      blocks.push(body, Buffer.alloc((512 - (body.length % 512)) % 512));
    }
  }
  blocks.push(Buffer.alloc(1024));
  return gzipSync(Buffer.concat(blocks));
}

export const MANIFEST = (name: string, extra: Record<string, unknown> = {}) =>
  JSON.stringify({ name, version: '1.0.0', platform_version: '>=0.0.0', ...extra });
