/**
 * Route option: serialize the response with `JSON.stringify` instead of a schema-compiled serializer.
 *
 * fast-json-stringify chooses between the branches of every `anyOf` (a union of literals, a nullable field, a
 * "status string or component object") by running a validator on the value at serialization time; on a body
 * made of many such fields it was slower than `JSON.stringify` by a factor of several. Use it only on routes
 * whose bodies are built field by field by a view function, so nothing undeclared can reach the client; the
 * response schema still documents the body and the contract tests still check every response against it.
 */
export const plainJson = {
  serializerCompiler: () => serializePlain,
} as const;

/**
 * A `data` already serialized, for a body many requests share (the `/status` snapshot): it is written into
 * each response's envelope as it is, instead of being serialized once per request.
 */
export class SerializedData<T> {
  declare private readonly type?: T;
  private constructor(readonly json: string) {}

  static of<T>(value: T): SerializedData<T> {
    return new SerializedData<T>(JSON.stringify(value));
  }

  /** Data serialized earlier (a cached page). */
  static fromJson<T>(json: string): SerializedData<T> {
    return new SerializedData<T>(json);
  }
}

function serializePlain(payload: unknown): string {
  if (payload !== null && typeof payload === 'object') {
    const { data, ...rest } = payload as { data?: unknown };
    if (data instanceof SerializedData) {
      // `rest` holds `success` first; `data` goes right after it, as in every other envelope.
      const { success, ...others } = rest as { success?: unknown };
      return `{"success":${JSON.stringify(success)},"data":${data.json},${JSON.stringify(others).slice(1)}`;
    }
  }
  return JSON.stringify(payload);
}
