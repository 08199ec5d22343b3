import { AppError } from '../http/app-error.js';

/**
 * How deep `data`, `metadata` and `data_filters` may nest. JSON.stringify (storing, signing, streaming) and the
 * response serializer recurse once per level and exhaust the stack a few thousand levels down; a body of 1 MiB
 * can nest 500 000 deep. No event payload needs more than a few dozen levels.
 */
export const MAX_NESTING = 100;

/** True when `value` holds objects or arrays nested more than `max` levels deep. Iterative: never recurses. */
export function nestsDeeperThan(value: unknown, max: number): boolean {
  const stack: [unknown, number][] = [[value, 0]];
  while (stack.length > 0) {
    const [item, depth] = stack.pop()!;
    if (typeof item !== 'object' || item === null) continue;
    if (depth + 1 > max) return true;
    const children = Array.isArray(item) ? item : Object.values(item);
    for (const child of children) {
      if (typeof child === 'object' && child !== null) stack.push([child, depth + 1]);
    }
  }
  return false;
}

/** @throws AppError VALIDATION_ERROR (422) naming `field` when `value` nests more than MAX_NESTING levels */
export function assertNesting(field: string, value: unknown): void {
  if (!nestsDeeperThan(value, MAX_NESTING)) return;
  throw new AppError('VALIDATION_ERROR', `${field} nests deeper than ${MAX_NESTING} levels`, {
    details: { field, reason: `nested deeper than ${MAX_NESTING} levels` },
  });
}

/**
 * `text` cut to at most `max` UTF-16 units without splitting a surrogate pair: half a pair is not text, and
 * strict JSON readers refuse the whole document that holds one.
 */
export function cutText(text: string, max: number): string {
  if (text.length <= max) return text;
  const last = text.charCodeAt(max - 1);
  return text.slice(0, last >= 0xd800 && last <= 0xdbff ? max - 1 : max);
}
