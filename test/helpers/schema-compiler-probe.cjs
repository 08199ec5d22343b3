// Preloaded (`node --require`) into a platform process by test/http/precompiled-schemas.test.ts: says on stderr
// whenever Fastify's schema compilers are loaded. The bundle's compilers load them only to compile a schema
// that has no precompiled function (src/http/lazy-schema-compilers.ts).
const Module = require('node:module');

const watched = new Set(['@fastify/ajv-compiler', '@fastify/fast-json-stringify-compiler']);
const load = Module._load;
Module._load = function (request, ...rest) {
  if (watched.has(request)) process.stderr.write(`schema compiler loaded: ${request}\n`);
  return load.call(this, request, ...rest);
};
