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
      const cls = body.replace(/[\\\]^]/g, (m) => `\\${m}`);
      out += `[${negate ? '^' : ''}${cls}]`;
      i = end;
    } else out += escapeRegExp(c);
  }
  return new RegExp(`^${out}$`);
}

/** Escapes a literal so Redis reads it as itself inside a MATCH pattern. */
export function escapeGlob(literal: string): string {
  return literal.replace(/[*?[\]\\]/g, (m) => `\\${m}`);
}

const escapeRegExp = (s: string) => s.replace(/[.*+?^${}()|[\]\\/-]/g, (m) => `\\${m}`);
