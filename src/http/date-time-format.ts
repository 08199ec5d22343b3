import type { Ajv } from 'ajv';

type Compare = (a: string, b: string) => number | undefined;
type DateTimeFormat = { validate: (value: string) => boolean; compare: Compare };

/**
 * Ajv's `date-time` (RFC 3339, from ajv-formats) without the leap second (`23:59:60`): JavaScript's Date
 * cannot hold one (`Date.parse` answers NaN), and the handlers read these values as Dates, so one reached them
 * as an invalid time and failed. A request naming one is refused with 422, the field named, like any other
 * malformed time. Installed by Fastify's `ajv.onCreate`, after ajv-formats.
 */
export function withoutLeapSeconds(ajv: Ajv): void {
  // ajv-formats (full mode) defines it as {validate, compare}.
  ajv.addFormat('date-time', leapFreeDateTime(ajv.formats['date-time'] as DateTimeFormat));
}

/**
 * The format `withoutLeapSeconds` installs, made from ajv-formats' own `date-time`. Also what the precompiled
 * validators of the build use (precompiled-formats.ts).
 */
export function leapFreeDateTime(rfc3339: DateTimeFormat): DateTimeFormat & { type: 'string' } {
  return {
    type: 'string',
    validate: (value: string) => rfc3339.validate(value) && !Number.isNaN(Date.parse(value)),
    compare: rfc3339.compare,
  };
}
