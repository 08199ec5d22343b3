import { fullFormats } from 'ajv-formats/dist/formats.js';
import { leapFreeDateTime } from './date-time-format.js';

/**
 * The formats the build's precompiled schema functions refer to (`require("./formats.cjs").validators[…]`):
 * bundled on its own as `dist/platform/precompiled-schemas/formats.cjs` (scripts/precompile-schemas.ts).
 *
 * `validators`: what the route validators' Ajv holds at run time (Fastify's ajv-compiler adds ajv-formats, then
 * `ajv.onCreate` replaces `date-time`, server.ts). `serializers`: what fast-json-stringify's own Ajv holds for
 * the branches of a response's `anyOf` (ajv-formats as it is).
 */
export const validators = {
  ...fullFormats,
  'date-time': leapFreeDateTime(fullFormats['date-time'] as Parameters<typeof leapFreeDateTime>[0]),
};
export const serializers = fullFormats;
