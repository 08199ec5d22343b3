import { createHash, randomBytes } from 'node:crypto';

/** Opaque secrets (refresh tokens, API keys) are stored only as SHA-256 hashes. */
export const sha256Hex = (value: string): string => createHash('sha256').update(value).digest('hex');

export const randomToken = (bytes = 32): string => randomBytes(bytes).toString('base64url');
