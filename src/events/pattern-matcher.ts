const SEGMENT = /^[A-Za-z0-9_-]+$/;
const SEGMENT_CHARS = '[A-Za-z0-9_-]+';

/**
 * A pattern is an event type whose segments may also be `*` (exactly one segment) or `**` (zero or more);
 * the lone pattern `*` matches every type. At most 10 segments and 255 characters, like a type.
 */
export function isValidPattern(pattern: string): boolean {
  if (pattern.length === 0 || pattern.length > 255) return false;
  const segments = pattern.split('.');
  return segments.length <= 10 && segments.every((s) => s === '*' || s === '**' || SEGMENT.test(s));
}

/**
 * The same pattern with every run of wildcard segments in one order, its `**` at most once: `**.**.x` is `**.x`,
 * `**.*.**` is `*.**` (each selects the same types). compilePattern matches by a regular expression, whose
 * backtracking grows with the ways a type's segments can be shared among adjacent wildcards: ten `**` in a row
 * took milliseconds per event and pattern, so that a hundred of them held the whole server for every event.
 */
export function canonicalPattern(pattern: string): string {
  if (!pattern.includes('*')) return pattern;
  const out: string[] = [];
  let stars = 0;
  let globstar = false;
  const endRun = () => {
    for (; stars > 0; stars--) out.push('*');
    if (globstar) out.push('**');
    globstar = false;
  };
  for (const segment of pattern.split('.')) {
    if (segment === '*') stars += 1;
    else if (segment === '**') globstar = true;
    else {
      endRun();
      out.push(segment);
    }
  }
  endRun();
  return out.join('.');
}

export type TypeMatcher = (eventType: string) => boolean;

const everything: TypeMatcher = () => true;

/**
 * Compiles one pattern to a matcher, once. Every segment of the type is matched with its trailing dot
 * (`user.login` is tested as `user.login.`), so `**` can stand for zero segments without special cases:
 * `user.**` → `^user\.(?:seg\.)*$` matches `user.` and `user.a.b.`.
 */
export function compilePattern(pattern: string): TypeMatcher {
  if (pattern === '*') return everything;
  if (!pattern.includes('*')) return (eventType) => eventType === pattern;
  let source = '^';
  for (const segment of canonicalPattern(pattern).split('.')) {
    if (segment === '**') source += `(?:${SEGMENT_CHARS}\\.)*`;
    else if (segment === '*') source += `${SEGMENT_CHARS}\\.`;
    else source += `${segment}\\.`;
  }
  const regex = new RegExp(`${source}$`);
  return (eventType) => regex.test(`${eventType}.`);
}

/** A matcher for a set of patterns: true when any of them matches. */
export function compilePatterns(patterns: readonly string[]): TypeMatcher {
  const matchers = patterns.map(compilePattern);
  if (matchers.includes(everything)) return everything;
  if (matchers.length === 1) return matchers[0]!;
  return (eventType) => matchers.some((m) => m(eventType));
}

/** The literal first segment a pattern requires, or undefined when its first segment is a wildcard. */
export function firstSegmentOf(pattern: string): string | undefined {
  const first = pattern.split('.', 1)[0]!;
  return first === '*' || first === '**' ? undefined : first;
}

/**
 * The literal segments a pattern starts with, joined (`shop5.order` for `shop5.order.*`), or undefined when it
 * starts with a wildcard or has none. Every type it matches is that prefix or starts with it and a dot.
 */
export function literalPrefixOf(pattern: string): string | undefined {
  const literal: string[] = [];
  for (const segment of pattern.split('.')) {
    if (segment === '*' || segment === '**') break;
    literal.push(segment);
  }
  return literal.length === 0 || !pattern.includes('*') ? undefined : literal.join('.');
}
