import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';

/**
 * AES-256-GCM for what the event system keeps encrypted at rest (confidential event data, webhook secrets).
 * Sealed text is `v1.<iv>.<tag>.<ciphertext>`, each part base64url.
 */
export class EventCipher {
  private readonly key: Buffer;

  /** `secret`: 32 bytes as base64 or hex; any other string is stretched with SHA-256. */
  constructor(secret: string) {
    this.key = keyFrom(secret);
  }

  seal(plain: string): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv);
    const body = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
    const tag = cipher.getAuthTag();
    return `v1.${iv.toString('base64url')}.${tag.toString('base64url')}.${body.toString('base64url')}`;
  }

  open(sealed: string): string {
    const [version, iv, tag, body] = sealed.split('.');
    if (version !== 'v1' || iv === undefined || tag === undefined || body === undefined) {
      throw new Error('not a sealed value');
    }
    const decipher = createDecipheriv('aes-256-gcm', this.key, Buffer.from(iv, 'base64url'));
    decipher.setAuthTag(Buffer.from(tag, 'base64url'));
    return Buffer.concat([decipher.update(Buffer.from(body, 'base64url')), decipher.final()]).toString(
      'utf8',
    );
  }
}

function keyFrom(secret: string): Buffer {
  if (/^[0-9a-fA-F]{64}$/.test(secret)) return Buffer.from(secret, 'hex');
  const b64 = Buffer.from(secret, 'base64');
  if (b64.length === 32 && /^[A-Za-z0-9+/_-]{43}=?$/.test(secret)) return b64;
  return createHash('sha256').update(secret, 'utf8').digest();
}

/** A new random key in the form the constructor reads. */
export const newEventKey = (): string => randomBytes(32).toString('base64');
