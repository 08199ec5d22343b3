/** One fixed-time autocannon run (this process is the load generator; the server runs in another). */
import autocannon from 'autocannon';

export interface LoadResult {
  rps: number;
  p50: number;
  p99: number;
  non2xx: number;
  errors: number;
  requests: number;
}

export interface LoadOptions {
  url: string;
  method?: 'GET' | 'POST';
  headers?: Record<string, string>;
  body?: string;
  connections: number;
  duration: number;
}

export async function httpLoad(options: LoadOptions): Promise<LoadResult> {
  const run = (duration: number, connections: number) =>
    autocannon({
      url: options.url,
      method: options.method ?? 'GET',
      headers: options.headers ?? {},
      ...(options.body === undefined ? {} : { body: options.body }),
      connections,
      duration,
    });
  // A short warm-up first, so the JIT, pools and caches are settled before the measured run.
  await run(1, Math.min(8, options.connections));
  const result = await run(options.duration, options.connections);
  return {
    rps: Math.round(result.requests.average),
    p50: result.latency.p50,
    p99: result.latency.p99,
    non2xx: result.non2xx,
    errors: result.errors,
    requests: result.requests.total,
  };
}
