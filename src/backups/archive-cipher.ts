import { createCipheriv, createDecipheriv, randomBytes, scrypt } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { open } from 'node:fs/promises';
import { type Readable, Transform, type TransformCallback } from 'node:stream';

/**
 * Encrypted archives: `PLATBKP1` | 16-byte scrypt salt | 12-byte IV | AES-256-GCM ciphertext | 16-byte tag.
 * The key is derived from `backups.encryption_key` with scrypt and a fresh salt per archive, so the
 * configured value may be a passphrase and no two archives share a key.
 */
const MAGIC = Buffer.from('PLATBKP1', 'ascii');
const SALT_BYTES = 16;
const IV_BYTES = 12;
const TAG_BYTES = 16;
const HEADER_BYTES = MAGIC.length + SALT_BYTES + IV_BYTES;

function deriveKey(secret: string, salt: Buffer): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    scrypt(secret, salt, 32, { N: 16_384, r: 8, p: 1 }, (err, key) => (err ? reject(err) : resolve(key)));
  });
}

/** A transform that turns an archive into the encrypted form above. */
export async function encryptingStream(secret: string): Promise<Transform> {
  const salt = randomBytes(SALT_BYTES);
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv('aes-256-gcm', await deriveKey(secret, salt), iv);
  let headerSent = false;
  const header = (t: Transform) => {
    if (!headerSent) t.push(Buffer.concat([MAGIC, salt, iv]));
    headerSent = true;
  };
  return new Transform({
    transform(chunk: Buffer, _enc, done: TransformCallback) {
      header(this);
      done(null, cipher.update(chunk));
    },
    flush(done: TransformCallback) {
      header(this);
      this.push(cipher.final());
      done(null, cipher.getAuthTag());
    },
  });
}

/** Whether a file starts like one of our encrypted archives. */
export async function isEncryptedArchive(file: string): Promise<boolean> {
  const handle = await open(file, 'r');
  try {
    const head = Buffer.alloc(MAGIC.length);
    const { bytesRead } = await handle.read(head, 0, MAGIC.length, 0);
    return bytesRead === MAGIC.length && head.equals(MAGIC);
  } finally {
    await handle.close();
  }
}

/**
 * The plaintext of an encrypted archive as a stream. GCM authenticates only at the end, so the stream
 * errors after its last chunk when the key is wrong or a byte was changed: whoever reads it must treat
 * nothing as trusted until the stream has ended cleanly.
 */
export async function decryptingStream(file: string, secret: string, size: number): Promise<Readable> {
  if (size <= HEADER_BYTES + TAG_BYTES) throw new Error('the encrypted archive is truncated');
  const handle = await open(file, 'r');
  const header = Buffer.alloc(HEADER_BYTES);
  const tag = Buffer.alloc(TAG_BYTES);
  try {
    await handle.read(header, 0, HEADER_BYTES, 0);
    await handle.read(tag, 0, TAG_BYTES, size - TAG_BYTES);
  } finally {
    await handle.close();
  }
  if (!header.subarray(0, MAGIC.length).equals(MAGIC)) throw new Error('not an encrypted archive');
  const salt = header.subarray(MAGIC.length, MAGIC.length + SALT_BYTES);
  const iv = header.subarray(MAGIC.length + SALT_BYTES);
  const decipher = createDecipheriv('aes-256-gcm', await deriveKey(secret, salt), iv);
  decipher.setAuthTag(tag);
  const body = createReadStream(file, { start: HEADER_BYTES, end: size - TAG_BYTES - 1 });
  body.on('error', (err) => decipher.destroy(err));
  return body.pipe(decipher);
}
