import { type ErrorExampleTraits, errorExample } from './openapi-error-examples.js';
import captured from './openapi-examples.json' with { type: 'json' };

/**
 * Examples captured from a running platform by `npm run openapi:examples`
 * (scripts/capture-openapi-examples.ts): operationId → `request` (the JSON body sent; `request <media type>`
 * for another kind of body) and status → the body answered.
 */
const CAPTURED: Record<string, Record<string, unknown>> = captured;

interface MediaType {
  schema?: unknown;
  example?: unknown;
}
interface ResponseLike {
  content?: Record<string, MediaType>;
}
export interface OperationLike {
  operationId?: string;
  parameters?: { in?: string; name?: string }[];
  requestBody?: { content?: Record<string, MediaType> };
  responses?: Record<string, ResponseLike>;
}

/** Sets `value` (when there is one) as the example of every media type of `holder`. */
function withExample<T extends { content?: Record<string, MediaType> }>(holder: T, value: unknown): T {
  if (value === undefined || !holder.content) return holder;
  const content: Record<string, MediaType> = {};
  for (const [type, media] of Object.entries(holder.content)) content[type] = { ...media, example: value };
  return { ...holder, content };
}

/**
 * Gives an operation its examples: the captured request body and success bodies, and for each error status
 * the captured envelope or, failing that, a representative one (openapi-error-examples.ts). The operation's
 * objects are copied, never changed in place, since the generator may share them between operations.
 */
export function addOpenApiExamples<T extends OperationLike>(
  op: T,
  traits: Omit<ErrorExampleTraits, 'pathParams'>,
): T {
  const examples = (op.operationId && CAPTURED[op.operationId]) || {};
  const next: T = { ...op };
  // A captured body was accepted by the platform: it replaces any example written into the route schema.
  if (op.requestBody?.content) {
    const content: Record<string, MediaType> = {};
    for (const [type, media] of Object.entries(op.requestBody.content)) {
      const value = examples[type === 'application/json' ? 'request' : `request ${type}`];
      content[type] = value === undefined ? media : { ...media, example: value };
    }
    next.requestBody = { ...op.requestBody, content };
  }
  const pathParams = (op.parameters ?? []).filter((p) => p.in === 'path').map((p) => p.name ?? '');
  const responses: Record<string, ResponseLike> = {};
  for (const [code, response] of Object.entries(op.responses ?? {})) {
    const value = /^[45]/.test(code)
      ? (examples[code] ?? errorExample(Number(code), { ...traits, pathParams }))
      : examples[code];
    responses[code] = withExample(response, value);
  }
  if (op.responses) next.responses = responses;
  return next;
}
