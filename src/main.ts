#!/usr/bin/env node
import { randomBytes } from 'node:crypto';
import { parseArgs } from 'node:util';
import { createPasswordHasher } from './auth/passwords.js';
import { loadBootConfig } from './config/load-config.js';
import { AppError } from './http/app-error.js';
import { createPlatform } from './server.js';
import { createDatabase } from './storage/create-database.js';
import { migrateToLatest } from './storage/migrate.js';
import { UserStore } from './users/user-store.js';

const USAGE = `Usage: platform <command> [options]

Commands:
  serve                         run the platform (default)
  migrate                       apply database migrations and exit
  admin reset-password <user>   set a new password (--password, or one is generated and printed)
  openapi                       print the OpenAPI document as JSON

Options:
  --config <file>               config file (default: platform.config.yaml|yml|json in the working folder)
  -h, --help                    show this help`;

async function main(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      config: { type: 'string' },
      password: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  const [command = 'serve', ...rest] = positionals;
  const boot = loadBootConfig(values.config ? { configFile: values.config } : {});

  switch (command) {
    case 'serve':
      return serve(boot);
    case 'migrate': {
      const database = createDatabase(boot.config);
      try {
        const applied = await migrateToLatest(database.db as never);
        process.stdout.write(
          applied.length ? `applied: ${applied.join(', ')}\n` : 'database is up to date\n',
        );
      } finally {
        await database.close();
      }
      return 0;
    }
    case 'admin': {
      if (rest[0] !== 'reset-password' || !rest[1]) {
        process.stderr.write(`${USAGE}\n`);
        return 2;
      }
      return resetPassword(boot, rest[1], values.password);
    }
    case 'openapi': {
      const platform = await createPlatform({
        boot: loadBootConfig({
          ...(values.config ? { configFile: values.config } : {}),
          overrides: { logging: { level: 'silent' } },
        }),
        print: () => {},
      });
      process.stdout.write(`${JSON.stringify(platform.app.swagger(), null, 2)}\n`);
      await platform.close();
      return 0;
    }
    default:
      process.stderr.write(`unknown command '${command}'\n${USAGE}\n`);
      return 2;
  }
}

async function serve(boot: ReturnType<typeof loadBootConfig>): Promise<number> {
  const platform = await createPlatform({ boot });
  const url = await platform.listen();
  platform.app.log.info(`listening on ${url}`);
  process.stdout.write(`listening on ${url}\n`);
  return new Promise<number>((resolve) => {
    let stopping = false;
    const stop = (signal: string) => {
      if (stopping) return;
      stopping = true;
      platform.app.log.info({ signal }, 'shutting down');
      const grace = platform.context.cfg().server.shutdown_grace_seconds * 1000;
      const timer = setTimeout(() => {
        platform.app.log.error('shutdown grace period passed; exiting');
        resolve(1);
      }, grace + 1000);
      timer.unref();
      platform.close().then(
        () => resolve(0),
        (err: unknown) => {
          platform.app.log.error({ err }, 'error during shutdown');
          resolve(1);
        },
      );
    };
    process.once('SIGTERM', () => stop('SIGTERM'));
    process.once('SIGINT', () => stop('SIGINT'));
  });
}

async function resetPassword(
  boot: ReturnType<typeof loadBootConfig>,
  username: string,
  password: string | undefined,
) {
  const database = createDatabase(boot.config);
  try {
    await migrateToLatest(database.db as never);
    const users = new UserStore(database.db);
    const user = await users.findByLogin(username);
    if (!user) {
      process.stderr.write(`no user '${username}'\n`);
      return 1;
    }
    const secret = password ?? randomBytes(12).toString('base64url');
    if (secret.length < boot.config.auth.password_min_length) {
      process.stderr.write(`passwords need at least ${boot.config.auth.password_min_length} characters\n`);
      return 2;
    }
    const hasher = createPasswordHasher(
      boot.config.auth.argon2_memory_kib,
      boot.config.auth.argon2_time_cost,
    );
    await users.update(user.id, {
      password_hash: await hasher.hash(secret),
      password_change_required: password === undefined ? 1 : 0,
      failed_login_attempts: 0,
      locked_until: null,
      last_password_change: new Date().toISOString(),
    });
    await database.db
      .updateTable('sessions')
      .set({ revoked_at: new Date().toISOString(), revoked_reason: 'password_reset' })
      .where('user_id', '=', user.id)
      .where('revoked_at', 'is', null)
      .execute();
    process.stdout.write(
      password === undefined
        ? `new password for ${username}: ${secret}\n`
        : `password of ${username} changed\n`,
    );
    return 0;
  } finally {
    await database.close();
  }
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err: unknown) => {
    if (err instanceof AppError && err.code === 'CONFIG_VALIDATION_ERROR') {
      const problems = (err.details?.['errors'] as { field: string; reason: string }[] | undefined) ?? [];
      process.stderr.write(
        `configuration is not valid:\n${problems.map((p) => `  - ${p.field}: ${p.reason}`).join('\n')}\n`,
      );
    } else {
      process.stderr.write(`platform failed: ${err instanceof Error ? err.message : String(err)}\n`);
    }
    process.exit(1);
  },
);
