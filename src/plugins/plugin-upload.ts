import type { FastifyRequest } from 'fastify';
import { AppError } from '../http/app-error.js';
import type { InstallInput } from './plugin-manager.js';

const fieldError = (field: string, reason: string) =>
  new AppError('VALIDATION_ERROR', `Invalid upload: ${field} ${reason}`, { details: { field, reason } });

/**
 * Reads a `multipart/form-data` install: field `source` = `file`, field `file` = the `.tgz`, and optionally
 * `sha256` (checked), `config` (JSON text) and `enabled`. The file is read into memory up to
 * `plugins.max_archive_bytes`; a larger one is refused as it streams in.
 */
export async function readUpload(request: FastifyRequest, maxBytes: number): Promise<InstallInput> {
  const fields: Record<string, string> = {};
  let archive: Buffer | undefined;
  let fileName: string | undefined;
  for await (const part of request.parts({
    limits: { files: 1, fields: 10, fileSize: maxBytes, fieldSize: 256 * 1024 },
  })) {
    if (part.type === 'file') {
      if (part.fieldname !== 'file') {
        part.file.resume();
        throw fieldError(part.fieldname, 'unknown file field (the package goes in `file`)');
      }
      const chunks: Buffer[] = [];
      for await (const chunk of part.file) chunks.push(chunk as Buffer);
      if (part.file.truncated) {
        throw new AppError('PLUGIN_PACKAGE_INVALID', `The archive exceeds ${maxBytes} bytes`, {
          details: { reason: 'archive_too_large', limit: maxBytes },
        });
      }
      archive = Buffer.concat(chunks);
      fileName = part.filename;
    } else {
      fields[part.fieldname] = String(part.value);
    }
  }
  const unknown = Object.keys(fields).filter((f) => !['source', 'sha256', 'config', 'enabled'].includes(f));
  if (unknown[0] !== undefined) throw fieldError(unknown[0], 'unknown field');
  if ((fields['source'] ?? 'file') !== 'file') throw fieldError('source', "must be 'file' for an upload");
  if (!archive) throw fieldError('file', 'is required');
  if (fields['sha256'] !== undefined && !/^[0-9a-fA-F]{64}$/.test(fields['sha256'])) {
    throw fieldError('sha256', 'must be 64 hexadecimal characters');
  }
  let config: Record<string, unknown> = {};
  if (fields['config'] !== undefined) {
    try {
      config = JSON.parse(fields['config']) as Record<string, unknown>;
    } catch {
      throw fieldError('config', 'must be a JSON object');
    }
    if (config === null || typeof config !== 'object' || Array.isArray(config))
      throw fieldError('config', 'must be a JSON object');
  }
  const enabled = fields['enabled'];
  if (enabled !== undefined && enabled !== 'true' && enabled !== 'false')
    throw fieldError('enabled', 'must be true or false');
  return {
    source: 'file',
    archive,
    sha256: fields['sha256'],
    fileName: fileName ?? 'upload.tgz',
    config,
    ...(enabled === undefined ? {} : { enabled: enabled === 'true' }),
  };
}
