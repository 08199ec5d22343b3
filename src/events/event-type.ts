const EVENT_TYPE = /^[A-Za-z0-9_-]+(?:\.[A-Za-z0-9_-]+){0,9}$/;

/** Decisions §4: 1–10 dot-separated segments of `[A-Za-z0-9_-]`, at most 255 characters. */
export function isValidEventType(type: string): boolean {
  return type.length <= 255 && EVENT_TYPE.test(type);
}
