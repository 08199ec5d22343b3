import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ConfigTree } from '../../src/config/config-tree.js';
import { type CliProcess, cliEnv, startCli } from '../cli/cli-process.js';
import { ADMIN_PASSWORD, provisionStorage } from '../helpers/test-platform.js';

/** What `api()` answers: the status, the headers and the parsed JSON body (undefined when not JSON). */
export interface ApiResponse {
  status: number;
  headers: Headers;
  data: any;
  ms: number;
}

export interface ApiOptions {
  token?: string;
  body?: unknown;
  headers?: Record<string, string>;
  /** Aborts the request after this long (a hang is a failure of its own, never a wait). Default 10 s. */
  timeoutMs?: number;
}

/** One platform process (`node --import tsx src/main.ts serve`) of the cluster. */
export interface Instance {
  readonly name: string;
  readonly base: string;
  readonly process: CliProcess;
  api(method: string, path: string, options?: ApiOptions): Promise<ApiResponse>;
  login(username: string, password: string): Promise<string>;
  adminToken(): Promise<string>;
}

/** Settings every instance of a test cluster gets (as PLATFORM__… variables), beside its storage. */
const CLUSTER_ENV: Record<string, string> = {
  PLATFORM_ADMIN_PASSWORD: ADMIN_PASSWORD,
  PLATFORM__SERVER__ENVIRONMENT: 'test',
  PLATFORM__WEBHOOKS__ALLOW_PRIVATE_TARGETS: 'true',
  PLATFORM__RATE_LIMITS__AUTHENTICATED__MAX: '100000',
  PLATFORM__RATE_LIMITS__AUTH__MAX: '100000',
  // The fault tests mark their traffic with X-Forwarded-For to give each check its own anonymous bucket.
  PLATFORM__SERVER__TRUSTED_PROXIES: '127.0.0.1',
  PLATFORM__CONSOLE__ENABLED: 'false',
  PLATFORM__LOGGING__LEVEL: 'error',
};

export async function api(base: string, method: string, path: string, options: ApiOptions = {}) {
  const headers: Record<string, string> = { ...(options.headers ?? {}) };
  if (options.token) headers['authorization'] = `Bearer ${options.token}`;
  if (options.body !== undefined) headers['content-type'] = 'application/json';
  const started = performance.now();
  const res = await fetch(`${base}${path}`, {
    method,
    headers,
    ...(options.body === undefined ? {} : { body: JSON.stringify(options.body) }),
    signal: AbortSignal.timeout(options.timeoutMs ?? 10_000),
  });
  const text = await res.text();
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch {
    data = undefined;
  }
  return { status: res.status, headers: res.headers, data, ms: performance.now() - started } as ApiResponse;
}

/**
 * Several real platform processes on one fresh PostgreSQL database and Redis key prefix (as the test platform
 * provisions them), each listening on a free port. `close()` kills what still runs and removes the storage.
 */
export class Cluster {
  readonly instances: Instance[] = [];
  private readonly cwd = mkdtempSync(join(tmpdir(), 'platform-cluster-'));
  private started = 0;

  private constructor(
    readonly storage: ConfigTree,
    private readonly cleanup: () => Promise<void>,
    private readonly env: Record<string, string>,
  ) {}

  /**
   * Starts `count` instances: the first alone (it migrates and creates the admin), then the rest at once. They
   * use a fresh database and Redis prefix on the suite's services, or `storage` when given (its `cleanup` runs
   * on `close()`).
   */
  static async start(
    count: number,
    env: Record<string, string> = {},
    storage?: { tree: ConfigTree; cleanup: () => Promise<void> },
  ): Promise<Cluster> {
    const provisioned = storage ?? (await provisionStorage());
    const cluster = new Cluster(provisioned.tree, provisioned.cleanup, env);
    try {
      await cluster.add();
      await Promise.all(Array.from({ length: count - 1 }, () => cluster.add()));
    } catch (err) {
      await cluster.close();
      throw err;
    }
    return cluster;
  }

  /** Starts one more instance on the cluster's storage and waits for its `listening on` line. */
  async add(extraEnv: Record<string, string> = {}): Promise<Instance> {
    const name = String.fromCharCode(65 + this.started++);
    const child = startCli(['serve'], {
      cwd: this.cwd,
      env: cliEnv(this.storage, { ...CLUSTER_ENV, ...this.env, ...extraEnv }),
    });
    const [, base] = await child.waitForLine(/^listening on (http:\/\/[^\s"]+)$/m, 60_000);
    let admin: string | undefined;
    const instance: Instance = {
      name,
      base: base!,
      process: child,
      api: (method, path, options) => api(base!, method, path, options),
      async login(username, password) {
        const res = await api(base!, 'POST', '/api/v1/auth/login', { body: { username, password } });
        if (res.status !== 200)
          throw new Error(`login of ${username} on ${name} failed: ${JSON.stringify(res.data)}`);
        return res.data.data.access_token as string;
      },
      async adminToken() {
        admin ??= await instance.login('admin', ADMIN_PASSWORD);
        return admin;
      },
    };
    this.instances.push(instance);
    return instance;
  }

  /** SIGKILL: the process gets no chance to release leases, close streams or finish requests. */
  async kill(instance: Instance): Promise<void> {
    instance.process.child.kill('SIGKILL');
    await instance.process.exited;
  }

  async close(): Promise<void> {
    for (const i of this.instances) if (i.process.child.exitCode === null) i.process.child.kill('SIGKILL');
    await Promise.all(this.instances.map((i) => i.process.exited));
    await this.cleanup().catch(() => {});
    rmSync(this.cwd, { recursive: true, force: true });
  }
}
