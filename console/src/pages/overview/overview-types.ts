/** The answers the overview reads, as far as it reads them. */

export interface Check {
  name: string;
  status: string;
  [figure: string]: unknown;
}

export interface ComponentsHealth {
  overall_status: string;
  components: { name: string; status: string; response_time_ms?: number; checks?: Check[] }[];
}

export type ComponentStatus = string | ({ status: string } & Record<string, unknown>);

export interface Status {
  status: string;
  version: string;
  environment: string;
  uptime: number;
  components: Record<string, ComponentStatus>;
}

export interface Summary {
  requests?: Record<string, number>;
  errors?: { total?: number; rate?: number; by_status?: Record<string, number> };
  resources?: Record<string, number>;
}

export interface EventsHealth {
  status: string;
  metrics: Record<string, number>;
  checks: { name: string; status: string; details?: Record<string, unknown> }[];
}

/** A component's figures from GET /status (an object), or {} when it reported only a word. */
export function figuresOf(s: Status | undefined, name: string): Record<string, unknown> {
  const c = s?.components[name];
  return c !== undefined && typeof c === 'object' ? c : {};
}

export const num = (v: unknown): number | undefined => (typeof v === 'number' ? v : undefined);
