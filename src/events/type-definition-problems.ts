import { compileDataSchema, dataProblems } from './data-schema.js';
import { isPlatformType } from './event-data.js';
import { isValidEventType } from './event-type.js';

export interface DefinitionProblem {
  field: string;
  reason: string;
}

/**
 * What is wrong with a type's definition for the catalogue, each problem naming its field under `prefix`: a name
 * that is not an exact event type or is one of the platform's own, a schema Ajv cannot compile or that does not
 * describe an object, examples the schema refuses.
 */
export function typeDefinitionProblems(
  eventType: string,
  definition: { schema: Record<string, unknown>; examples?: readonly unknown[] | undefined },
  fields: { type: string; prefix: string },
): DefinitionProblem[] {
  if (!isValidEventType(eventType)) {
    return [
      {
        field: fields.type,
        reason: 'must be an exact event type (1–10 dot-separated segments, no wildcards)',
      },
    ];
  }
  if (isPlatformType(eventType))
    return [{ field: fields.type, reason: "is reserved for the platform's own events" }];
  const schemaField = `${fields.prefix}schema`;
  const type = definition.schema['type'];
  if (type !== undefined && type !== 'object') {
    return [{ field: schemaField, reason: "must describe an object (an event's data is one)" }];
  }
  const { validate, error } = compileDataSchema(definition.schema);
  if (!validate) return [{ field: schemaField, reason: error ?? 'is invalid' }];
  const problems: DefinitionProblem[] = [];
  (definition.examples ?? []).forEach((example, i) => {
    if (validate(example)) return;
    for (const p of dataProblems(validate)) {
      problems.push({
        field: `${fields.prefix}examples.${i}${p.field.slice('data'.length)}`,
        reason: `${p.reason} (the example does not match the schema)`,
      });
    }
  });
  return problems;
}
