/** What Ajv reports of one failed check (the part the error envelope reads). */
export interface ValidationIssue {
  instancePath?: string;
  schemaPath?: string;
  keyword?: string;
  params?: Record<string, unknown>;
  message?: string;
}

/**
 * A value outside a union of literals (TypeBox's `Type.Union([Type.Literal(…), …])`, an `anyOf` of `const`s)
 * fails every branch: Ajv reports "must be equal to constant" once per literal, then "must match a schema in
 * anyOf", and never which values would do. Those issues become one per field, "must be one of: a, b, c";
 * so does a lone literal (`Type.Literal('webhook')`: "must be one of: webhook"). Every other issue is kept as
 * it is, in order.
 */
export function withEnumsCollapsed(issues: readonly ValidationIssue[]): ValidationIssue[] {
  const allowed = new Map<string, unknown[]>();
  for (const issue of issues) {
    if (issue.keyword !== 'const') continue;
    const path = issue.instancePath ?? '';
    allowed.set(path, [...(allowed.get(path) ?? []), issue.params?.['allowedValue']]);
  }
  if (allowed.size === 0) return [...issues];
  // Where a union of literals failed as a whole (its anyOf issue is there too).
  const unions = new Set(
    issues
      .filter((i) => i.keyword === 'anyOf' && allowed.has(i.instancePath ?? ''))
      .map((i) => i.instancePath ?? ''),
  );
  const oneOf = (path: string) => {
    const values = [
      ...new Set(allowed.get(path)!.map((v) => (typeof v === 'string' ? v : JSON.stringify(v)))),
    ];
    return `must be one of: ${values.join(', ')}`;
  };
  const named = new Set<string>();
  const out: ValidationIssue[] = [];
  for (const issue of issues) {
    const path = issue.instancePath ?? '';
    if (unions.has(path)) {
      if (issue.keyword === 'anyOf') out.push({ ...issue, keyword: 'enum', message: oneOf(path) });
      else if (issue.keyword !== 'const') out.push(issue);
    } else if (issue.keyword === 'const') {
      // A lone literal: named once, like a union's.
      if (!named.has(path)) out.push({ ...issue, keyword: 'enum', message: oneOf(path) });
      named.add(path);
    } else out.push(issue);
  }
  return out;
}
