/** An OpenAPI path template compiled to match request paths. */
export interface PathTemplate {
  template: string;
  pattern: RegExp;
  /** How many `{…}` parameters it has; fewer first, so a static path wins over a templated one. */
  params: number;
}

/**
 * The document's path templates as patterns, static ones first (`/events/stats` before `/events/{event_id}`).
 * A parameter matches one path segment; a trailing `{path}` (a plugin's own path) may hold slashes.
 */
export function compilePathTemplates(templates: Iterable<string>): PathTemplate[] {
  return [...templates]
    .map((template) => ({
      template,
      pattern: new RegExp(
        `^${template
          .split(/\{[^}]+\}/)
          .map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
          .join(template.endsWith('{path}') ? '.+' : '[^/]+')}$`,
      ),
      params: (template.match(/\{/g) ?? []).length,
    }))
    .sort((a, b) => a.params - b.params);
}
