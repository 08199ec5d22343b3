/**
 * Compiles a glob the way Redis `SCAN MATCH` reads it, so L1 and L2 clear exactly the same keys: a port of
 * Redis's `stringmatchlen`, over the UTF-8 bytes of key and pattern as Redis sees them. `*` is any run of
 * bytes, `?` one byte (so `é` is `??`), `[abc]`, `[a-z]` (reversed ends are swapped), `[^a]` classes,
 * `\` escapes (also inside a class: `[\]]` is `]`); `[]` matches nothing and an unterminated `[a` is `[a]`.
 * Unlike path globs, `*` also crosses `:` and `/` — cache keys are flat strings.
 */
export function globToRegExp(glob: string): { test(key: string): boolean } {
  const pattern = Buffer.from(glob, 'utf8');
  return { test: (key) => globMatches(pattern, Buffer.from(key, 'utf8')) };
}

/** Redis compares class range ends as C `char`s, signed on the x86-64 servers it runs on. */
const signed = (byte: number | undefined) => ((byte ?? 0) << 24) >> 24;

export function globMatches(pattern: Uint8Array, key: Uint8Array): boolean {
  const skipLonger = { value: false };
  return matchAt(pattern, 0, key, 0, skipLonger, 0);
}

const STAR = 0x2a;
const QUESTION = 0x3f;
const OPEN = 0x5b;
const CLOSE = 0x5d;
const CARET = 0x5e;
const DASH = 0x2d;
const BACKSLASH = 0x5c;

function matchAt(
  p: Uint8Array,
  pi: number,
  s: Uint8Array,
  si: number,
  skipLonger: { value: boolean },
  nesting: number,
): boolean {
  // Redis's protection against abusive patterns.
  if (nesting > 1000) return false;
  while (pi < p.length && si < s.length) {
    const c = p[pi];
    if (c === STAR) {
      while (pi + 1 < p.length && p[pi + 1] === STAR) pi += 1;
      if (pi + 1 === p.length) return true;
      while (si < s.length) {
        if (matchAt(p, pi + 1, s, si, skipLonger, nesting + 1)) return true;
        if (skipLonger.value) return false;
        si += 1;
      }
      // No match for the rest from anywhere in the rest of the key: earlier stars cannot do better.
      skipLonger.value = true;
      return false;
    }
    if (c === QUESTION) {
      si += 1;
    } else if (c === OPEN) {
      pi += 1;
      const not = p[pi] === CARET;
      if (not) pi += 1;
      let match = false;
      for (;;) {
        if (p[pi] === BACKSLASH && p.length - pi >= 2) {
          pi += 1;
          if (p[pi] === s[si]) match = true;
        } else if (p[pi] === CLOSE) {
          break;
        } else if (pi >= p.length) {
          // Unterminated class: Redis steps back onto its last byte, which the loop below then passes.
          pi -= 1;
          break;
        } else if (p.length - pi >= 3 && p[pi + 1] === DASH) {
          let start = signed(p[pi]);
          let end = signed(p[pi + 2]);
          if (start > end) [start, end] = [end, start];
          const byte = signed(s[si]);
          pi += 2;
          if (byte >= start && byte <= end) match = true;
        } else if (p[pi] === s[si]) {
          match = true;
        }
        pi += 1;
      }
      if (not) match = !match;
      if (!match) return false;
      si += 1;
    } else {
      if (c === BACKSLASH && p.length - pi >= 2) pi += 1;
      if (p[pi] !== s[si]) return false;
      si += 1;
    }
    pi += 1;
    if (si === s.length) {
      while (p[pi] === STAR) pi += 1;
      break;
    }
  }
  return pi >= p.length && si === s.length;
}

/** Escapes a literal so Redis reads it as itself inside a MATCH pattern. */
export function escapeGlob(literal: string): string {
  return literal.replace(/[*?[\]\\]/g, (m) => `\\${m}`);
}
