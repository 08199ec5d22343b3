/** Where the cluster-mode tests find PostgreSQL and Redis (the local services by default). */
export const PG_ADMIN_URL = process.env.PLATFORM_TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
export const REDIS_URL = process.env.PLATFORM_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

export const backend: 'sqlite' | 'cluster' =
  process.env.PLATFORM_TEST_BACKEND === 'cluster' ? 'cluster' : 'sqlite';

/** `postgres://…/postgres` → `postgres://…/<name>` */
export function databaseUrl(name: string): string {
  const url = new URL(PG_ADMIN_URL);
  url.pathname = `/${name}`;
  return url.toString();
}
