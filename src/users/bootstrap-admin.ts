import { randomBytes } from 'node:crypto';
import type { FastifyBaseLogger } from 'fastify';
import type { PasswordHasher } from '../auth/passwords.js';
import type { UserStore } from './user-store.js';

/**
 * On an empty database, creates the `admin` user. With PLATFORM_ADMIN_PASSWORD it uses that password;
 * otherwise it generates one, prints it once to the console, and requires a change at first login.
 */
export async function bootstrapAdmin(
  users: UserStore,
  hasher: PasswordHasher,
  password: string | undefined,
  log: FastifyBaseLogger,
  print: (text: string) => void,
): Promise<void> {
  if ((await users.count()) > 0) return;
  const generated = password === undefined;
  const secret = password ?? randomBytes(12).toString('base64url');
  try {
    await users.create({
      username: 'admin',
      email: 'admin@localhost',
      passwordHash: await hasher.hash(secret),
      fullName: 'Administrator',
      roles: ['admin'],
      passwordChangeRequired: generated,
    });
  } catch (err) {
    // Another instance starting at the same moment created it first.
    if ((await users.count()) > 0) return;
    throw err;
  }
  log.info({ username: 'admin', generated_password: generated }, 'created the first administrator');
  if (generated) {
    print(
      [
        '',
        '  First start: created the administrator account.',
        '    username: admin',
        `    password: ${secret}`,
        '  This password is shown once. Log in with POST /api/v1/auth/login and change it',
        '  (POST /api/v1/auth/change-password), or set PLATFORM_ADMIN_PASSWORD before the first start.',
        '',
      ].join('\n'),
    );
  }
}
