import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsImport from 'ajv-formats';
import { compilePathTemplates, type PathTemplate } from '../../src/http/openapi-path-templates.js';

// ajv-formats is CommonJS: under ESM its function may sit on the default export's `default`.
type AddFormats = (ajv: Ajv2020) => unknown;
const addFormats = ((addFormatsImport as unknown as { default?: AddFormats }).default ??
  addFormatsImport) as unknown as AddFormats;

interface MediaType {
  schema?: Record<string, unknown>;
}
interface ResponseObject {
  $ref?: string;
  content?: Record<string, MediaType>;
}
interface Operation {
  responses?: Record<string, ResponseObject>;
}
export interface OpenApiDocument {
  paths: Record<string, Record<string, Operation>>;
  components?: Record<string, unknown>;
}

/** A response the OpenAPI document does not describe: the test that received it fails with this error. */
export class ResponseContractError extends Error {
  override name = 'ResponseContractError';
}

/**
 * Checks `(method, url, status, content type, body)` against the OpenAPI document the platform serves, so the
 * document and the behaviour cannot drift apart: an undocumented status, an undocumented media type, or a
 * JSON body that does not match the documented schema is a problem. Routes outside the document (the docs
 * pages, the console, plugin routes under /api/v1/ext/) are not checked; an unknown /api/v1 path must still
 * answer with the error envelope.
 */
export class ResponseValidator {
  private readonly ajv: Ajv2020;
  private readonly matchers: PathTemplate[];
  private readonly compiled = new Map<string, ValidateFunction>();

  constructor(private readonly doc: OpenApiDocument) {
    this.ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: true, logger: false });
    addFormats(this.ajv);
    this.matchers = compilePathTemplates(Object.keys(doc.paths));
  }

  /** The document's path template that serves `url` for `method`, if any. */
  operationFor(method: string, url: string): { template: string; operation: Operation } | undefined {
    const raw = url.split('?')[0] ?? url;
    let path = raw;
    try {
      path = decodeURI(raw);
    } catch {
      // A malformed escape (the nasty-input tests send them) is matched as sent.
    }
    const verb = method.toLowerCase() === 'head' ? 'get' : method.toLowerCase();
    for (const m of this.matchers) {
      if (!m.pattern.test(path)) continue;
      const operation = this.doc.paths[m.template]?.[verb];
      if (operation) return { template: m.template, operation };
    }
    return undefined;
  }

  /** Returns a description of every way the response departs from the document (empty when it conforms). */
  check(
    method: string,
    url: string,
    status: number,
    contentType: string | undefined,
    body: string,
  ): string[] {
    const name = `${method} ${url.split('?')[0]} → ${status}`;
    const found = this.operationFor(method, url);
    const path = url.split('?')[0] ?? url;
    if (!found) {
      if (!path.startsWith('/api/v1/') || path.startsWith('/api/v1/ext/')) return [];
      // An unknown route (or a method the path does not have) still answers in the error envelope.
      const envelope = this.doc.components?.['schemas'] as Record<string, unknown> | undefined;
      if (!envelope?.['ErrorEnvelope']) return [];
      return this.validateJson(
        `${name} (undocumented route)`,
        'ErrorEnvelope',
        { $ref: '#/components/schemas/ErrorEnvelope' },
        contentType,
        body,
      );
    }
    const responses = found.operation.responses ?? {};
    const key = [String(status), `${String(status)[0]}XX`, 'default'].find((k) => responses[k]);
    if (!key) return [`${name}: status ${status} is not documented for ${method} ${found.template}`];
    const response = responses[key] as ResponseObject;
    const content = response.content;
    if (!content || Object.keys(content).length === 0) return [];
    if (method.toUpperCase() === 'HEAD' || status === 204 || status === 304) return [];
    const media = (contentType ?? '').split(';')[0]?.trim().toLowerCase() ?? '';
    const documented = Object.keys(content);
    const matching = documented.find(
      (m) => m === media || m === '*/*' || (m.endsWith('/*') && media.startsWith(m.slice(0, -1))),
    );
    if (!matching)
      return [`${name}: content type "${media}" is not documented (documented: ${documented.join(', ')})`];
    const schema = content[matching]?.schema;
    if (!schema || !/json/.test(matching)) return [];
    return this.validateJson(name, `${method} ${found.template} ${key} ${matching}`, schema, media, body);
  }

  private validateJson(
    name: string,
    cacheKey: string,
    schema: Record<string, unknown>,
    media: string | undefined,
    body: string,
  ): string[] {
    if (!/json/.test(media ?? '')) return [`${name}: expected a JSON body, got content type "${media}"`];
    let parsed: unknown;
    try {
      parsed = JSON.parse(body);
    } catch {
      return [`${name}: the body is not valid JSON`];
    }
    let validate = this.compiled.get(cacheKey);
    if (!validate) {
      // The components ride along so `#/components/schemas/…` references resolve from the schema's root.
      validate = this.ajv.compile({ ...schema, components: this.doc.components ?? {} });
      this.compiled.set(cacheKey, validate);
    }
    if (validate(parsed)) return [];
    return (validate.errors ?? []).slice(0, 10).map((e) => {
      const params = JSON.stringify(e.params);
      return `${name}: body${e.instancePath || ''} ${e.message ?? 'is invalid'} ${params}`;
    });
  }
}
