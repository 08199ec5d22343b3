import { randomFillSync } from 'node:crypto';

const ALPHABET = '0123456789abcdefghjkmnpqrstvwxyz';
const RANDOM_PER_ID = 13;
/**
 * Random bytes are drawn 256 ids at a time: one `randomBytes(16)` per id (every request gets an id) cost
 * about 5 % of a busy server's CPU, most of it the per-call overhead rather than the randomness.
 */
const pool = Buffer.alloc(RANDOM_PER_ID * 256);
let offset = pool.length;
let headMs = -1;
let head = '';
let counter = 0;

/**
 * A prefixed, time-sortable identifier: `evt_` + 10 characters of milliseconds + 3 of a counter + 13 random
 * ones (Crockford base32, lower case, 26 in all). Ids made later sort after ids made earlier: across processes
 * to the millisecond, and within one process always, since the counter orders the ids of the same millisecond
 * (32,768 of them; past that the order within the millisecond is lost, not the uniqueness).
 */
export function newId(prefix: string): string {
  const ms = Date.now();
  if (ms === headMs) counter = (counter + 1) & 0x7fff;
  else {
    headMs = ms;
    counter = 0;
    let time = ms;
    head = '';
    for (let i = 0; i < 10; i++) {
      head = ALPHABET[time % 32] + head;
      time = Math.floor(time / 32);
    }
  }
  if (offset + RANDOM_PER_ID > pool.length) {
    randomFillSync(pool);
    offset = 0;
  }
  let tail = ALPHABET[counter >> 10]! + ALPHABET[(counter >> 5) & 31] + ALPHABET[counter & 31];
  for (let i = offset; i < offset + RANDOM_PER_ID; i++) tail += ALPHABET[pool[i]! % 32];
  offset += RANDOM_PER_ID;
  return `${prefix}_${head}${tail}`;
}

let isoMs = -1;
let iso = '';
/** The current time as ISO 8601; formatted once per millisecond (a request asks for it several times). */
export function nowIso(): string {
  const ms = Date.now();
  if (ms !== isoMs) {
    isoMs = ms;
    iso = new Date(ms).toISOString();
  }
  return iso;
}
