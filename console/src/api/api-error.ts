/** An error answer of the platform's API (the error envelope), or a network failure (status 0). */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details: Record<string, unknown> = {},
    readonly requestId?: string,
    readonly retryAfter?: number,
  ) {
    super(message);
    this.name = 'ApiError';
  }

  /**
   * The server has no such route at all (it answers `No route METHOD /path` with the path in details), as
   * opposed to a route that exists and did not find a resource. Pages show "not available" for this.
   */
  get unavailable(): boolean {
    return (
      this.status === 404 &&
      this.code === 'RESOURCE_NOT_FOUND' &&
      typeof this.details['path'] === 'string' &&
      this.message.startsWith('No route')
    );
  }

  /** Problems by field (`details.errors: [{field, reason}]`, or the single `details.field`). */
  get fieldErrors(): Record<string, string> {
    const out: Record<string, string> = {};
    const errors = this.details['errors'];
    if (Array.isArray(errors)) {
      for (const e of errors as { field?: unknown; reason?: unknown }[]) {
        if (typeof e.field === 'string' && !(e.field in out)) out[e.field] = String(e.reason ?? 'is invalid');
      }
    }
    const field = this.details['field'];
    if (typeof field === 'string' && !(field in out))
      out[field] = String(this.details['reason'] ?? 'is invalid');
    return out;
  }
}
