import { compilePatterns } from '../events/pattern-matcher.js';
import { type DefinitionProblem, typeDefinitionProblems } from '../events/type-definition-problems.js';

/**
 * What is wrong with the types a manifest declares in `events.types`: each must be a type the plugin emits
 * (`events.emits`) and a sound definition for the event catalogue.
 */
export function declaredTypeProblems(manifest: {
  events: {
    emits: string[];
    types: Record<string, { schema: Record<string, unknown>; examples?: unknown[] | undefined }>;
  };
}): DefinitionProblem[] {
  const emits = compilePatterns(manifest.events.emits);
  const problems: DefinitionProblem[] = [];
  for (const [eventType, definition] of Object.entries(manifest.events.types)) {
    const field = `manifest.events.types.${eventType}`;
    const found = typeDefinitionProblems(eventType, definition, { type: field, prefix: `${field}.` });
    if (found.length === 0 && !emits(eventType)) {
      found.push({ field, reason: "is not among the types the manifest's events.emits lists" });
    }
    problems.push(...found);
  }
  return problems;
}
