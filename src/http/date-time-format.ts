import type { Ajv, Format } from 'ajv';

/**
 * Ajv's `date-time` (RFC 3339, from ajv-formats) without the leap second (`23:59:60`): JavaScript's Date
 * cannot hold one (`Date.parse` answers NaN), and the handlers read these values as Dates, so one reached them
 * as an invalid time and failed. A request naming one is refused with 422, the field named, like any other
 * malformed time. Installed by Fastify's `ajv.onCreate`, after ajv-formats.
 */
export function withoutLeapSeconds(ajv: Ajv): void {
  const rfc3339 = ajv.formats['date-time'];
  const valid = validatorOf(rfc3339);
  ajv.addFormat('date-time', {
    type: 'string',
    validate: (value: string) => valid(value) && !Number.isNaN(Date.parse(value)),
    ...(rfc3339 && typeof rfc3339 === 'object' && 'compare' in rfc3339 && rfc3339.compare
      ? { compare: rfc3339.compare as (a: string, b: string) => number }
      : {}),
  });
}

function validatorOf(format: Format | undefined): (value: string) => boolean {
  if (format === undefined || format === true) return () => true;
  if (typeof format === 'string') return (value) => new RegExp(format).test(value);
  if (format instanceof RegExp) return (value) => format.test(value);
  if (typeof format === 'function') return (value) => format(value) === true;
  return validatorOf(format.validate as Format);
}
