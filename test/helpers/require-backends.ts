import { Redis } from 'ioredis';
import pg from 'pg';
import { PG_ADMIN_URL, REDIS_URL } from './backends.js';

/** Global setup of the cluster project: PostgreSQL and Redis must answer, or the run fails here. */
export default async function requireBackends(): Promise<void> {
  const problems: string[] = [];
  const client = new pg.Client({ connectionString: PG_ADMIN_URL, connectionTimeoutMillis: 3000 });
  try {
    await client.connect();
    await client.query('select 1');
  } catch (err) {
    problems.push(`PostgreSQL at ${PG_ADMIN_URL}: ${(err as Error).message}`);
  } finally {
    await client.end().catch(() => {});
  }
  const redis = new Redis(REDIS_URL, { lazyConnect: true, maxRetriesPerRequest: 0, connectTimeout: 3000 });
  redis.on('error', () => {});
  try {
    await redis.connect();
    await redis.ping();
  } catch (err) {
    problems.push(`Redis at ${REDIS_URL}: ${(err as Error).message}`);
  } finally {
    redis.disconnect();
  }
  if (problems.length > 0) {
    throw new Error(
      `The cluster test project needs PostgreSQL and Redis:\n  ${problems.join('\n  ')}\n` +
        'Start them (see README, "Tests"), or run only the embedded project with PLATFORM_TEST_BACKENDS=embedded.',
    );
  }
}
