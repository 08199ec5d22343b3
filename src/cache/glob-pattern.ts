/**
 * Compiles a glob the way Redis `SCAN MATCH` reads it (`*` any run of characters, `?` one character,
 * `[abc]`, `[a-z]`, `[^a]` classes, `\` escapes), so L1 and L2 clear exactly the same keys.
 * Unlike path globs, `*` also crosses `:` and `/` — cache keys are flat strings.
 */
export function globToRegExp(glob: string): RegExp {
  let out = '';
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i]!;
    if (c === '*') out += '[\\s\\S]*';
    else if (c === '?') out += '[\\s\\S]';
    else if (c === '\\' && i + 1 < glob.length) out += escapeRegExp(glob[++i]!);
    else if (c === '[') {
      const end = glob.indexOf(']', i + 2);
      if (end === -1) {
        out += '\\[';
        continue;
      }
      let body = glob.slice(i + 1, end);
      const negate = body.startsWith('^');
      if (negate) body = body.slice(1);
      out += `[${negate ? '^' : ''}${classBody(body)}]`;
      i = end;
    } else out += escapeRegExp(c);
  }
  return new RegExp(`^${out}$`);
}

/**
 * The inside of a `[...]` class: `\` makes the next character literal, and a range whose ends are reversed
 * (`z-a`) is read as Redis reads it, with its ends swapped, rather than being a RegExp syntax error.
 */
function classBody(body: string): string {
  let out = '';
  for (let j = 0; j < body.length; j++) {
    let lo = body[j]!;
    if (lo === '\\' && j + 1 < body.length) lo = body[++j]!;
    if (body[j + 1] === '-' && j + 2 < body.length) {
      let hi = body[j + 2]!;
      j += 2;
      if (hi === '\\' && j + 1 < body.length) hi = body[++j]!;
      out += lo <= hi ? `${escapeClass(lo)}-${escapeClass(hi)}` : `${escapeClass(hi)}-${escapeClass(lo)}`;
    } else out += escapeClass(lo);
  }
  return out;
}

const escapeClass = (c: string) => c.replace(/[\\\]^-]/g, (m) => `\\${m}`);

/** Escapes a literal so Redis reads it as itself inside a MATCH pattern. */
export function escapeGlob(literal: string): string {
  return literal.replace(/[*?[\]\\]/g, (m) => `\\${m}`);
}

const escapeRegExp = (s: string) => s.replace(/[.*+?^${}()|[\]\\/-]/g, (m) => `\\${m}`);
