import { randomBytes } from 'node:crypto';

const ALPHABET = '0123456789abcdefghjkmnpqrstvwxyz';

/**
 * A prefixed, time-sortable identifier: `evt_` + 10 characters of milliseconds + 16 random ones
 * (Crockford base32, lower case). Ids made later sort after ids made earlier (to the millisecond).
 */
export function newId(prefix: string): string {
  let time = Date.now();
  let head = '';
  for (let i = 0; i < 10; i++) {
    head = ALPHABET[time % 32] + head;
    time = Math.floor(time / 32);
  }
  const bytes = randomBytes(16);
  let tail = '';
  for (const b of bytes) tail += ALPHABET[b % 32];
  return `${prefix}_${head}${tail}`;
}

export const nowIso = (): string => new Date().toISOString();
