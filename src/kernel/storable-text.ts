// NUL, and a UTF-16 surrogate without its pair: PostgreSQL refuses both in a text value, and a statement that
// holds one fails whole (a batch of events or log lines with it); SQLite would store NUL and mangle the other.
// As escapes inside JSON text (data, metadata) they are harmless.
// biome-ignore lint/suspicious/noControlCharactersInRegex: NUL is one of the characters looked for.
const UNSTORABLE = /\u0000|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;
const UNSTORABLE_ALL = new RegExp(UNSTORABLE.source, 'g');

/** True when a text column could not hold `value` on every database. */
export const isUnstorableText = (value: string): boolean => UNSTORABLE.test(value);

/** `value` with each character no database can store replaced by U+FFFD. */
export const storableText = (value: string): string =>
  UNSTORABLE.test(value) ? value.replace(UNSTORABLE_ALL, '\ufffd') : value;

/**
 * Text from elsewhere (a log line, an error a plugin threw) as it is stored: cut to `maxChars` (marked with
 * `…`), then made storable, since the cut may split a surrogate pair.
 */
export const storableExcerpt = (value: string, maxChars: number): string =>
  storableText(value.length > maxChars ? `${value.slice(0, maxChars)}…` : value);
