#!/usr/bin/env node
import { parseArgs } from 'node:util';
import { loadBootConfig } from './config/load-config.js';
import { AppError } from './http/app-error.js';
import { PLATFORM_VERSION } from './system/platform-info.js';

const USAGE = `Usage: platform <command> [options]

Commands:
  serve                         run the platform (default)
  migrate                       apply database migrations and exit
  admin reset-password <user>   set a new password (--password, or one is generated and printed)
                                and end every session of the user
  openapi                       print the OpenAPI document as JSON
  backup create|list|import|restore   back up or restore the configured storage (platform backup --help)
  plugin pack <dir> [--out <dir>]     pack a plugin folder into <name>-<version>.tgz and print its sha256

Options:
  --config <file>               config file (default: platform.config.yaml|yml|json in the working
                                folder, or PLATFORM_CONFIG)
  --password <password>         the new password for admin reset-password
  -v, --version                 print the version
  -h, --help                    show this help

Settings come from defaults < config file < environment (PLATFORM__SECTION__KEY); see docs/configuration.md.`;

const out = (text: string) => process.stdout.write(text);
const err = (text: string) => process.stderr.write(text);

async function main(argv: string[]): Promise<number> {
  // `backup` takes options of its own, so it parses them itself (src/backups/backup-cli.ts).
  if (argv[0] === 'backup')
    return (await import('./backups/backup-cli.js')).backupCommand(argv.slice(1), { out, err });
  if (argv[0] === 'plugin')
    return (await import('./plugins/plugin-cli.js')).pluginCommand(argv.slice(1), { out, err });
  let parsed: ReturnType<typeof parse>;
  try {
    parsed = parse(argv);
  } catch (e) {
    err(`${(e as Error).message}\n\n${USAGE}\n`);
    return 2;
  }
  const { values, positionals } = parsed;
  if (values.help) {
    out(`${USAGE}\n`);
    return 0;
  }
  if (values.version) {
    out(`${PLATFORM_VERSION}\n`);
    return 0;
  }
  const options = values.config ? { configFile: values.config } : {};
  const [command = 'serve', ...rest] = positionals;
  // Commands are imported when chosen, so help, usage errors and config errors answer without loading the server.
  switch (command) {
    case 'serve': {
      const boot = loadBootConfig(options);
      const { serveCommand } = await import('./cli/serve-command.js');
      return serveCommand(boot, out);
    }
    case 'migrate': {
      const boot = loadBootConfig(options);
      const { migrateCommand } = await import('./cli/migrate-command.js');
      return migrateCommand(boot, out);
    }
    case 'admin': {
      if (rest[0] !== 'reset-password' || !rest[1] || rest.length > 2) {
        err(`${USAGE}\n`);
        return 2;
      }
      const boot = loadBootConfig(options);
      const { resetPasswordCommand } = await import('./cli/reset-password-command.js');
      return resetPasswordCommand(boot, rest[1], values.password, { out, err });
    }
    case 'openapi': {
      const { openapiCommand } = await import('./cli/openapi-command.js');
      return openapiCommand(options, out);
    }
    default:
      err(`unknown command '${command}'\n\n${USAGE}\n`);
      return 2;
  }
}

function parse(argv: string[]) {
  return parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      config: { type: 'string' },
      password: { type: 'string' },
      version: { type: 'boolean', short: 'v' },
      help: { type: 'boolean', short: 'h' },
    },
  });
}

/** Exits once stdout and stderr are flushed: writes to a pipe are asynchronous, and exit would cut them off. */
function exit(code: number): void {
  process.stdout.write('', () => process.stderr.write('', () => process.exit(code)));
}

main(process.argv.slice(2)).then(
  (code) => exit(code),
  (error: unknown) => {
    if (error instanceof AppError && error.code === 'CONFIG_VALIDATION_ERROR') {
      const problems = (error.details?.['errors'] as { field: string; reason: string }[] | undefined) ?? [];
      err(`configuration is not valid:\n${problems.map((p) => `  - ${p.field}: ${p.reason}`).join('\n')}\n`);
    } else {
      err(`platform failed: ${error instanceof Error ? error.message : String(error)}\n`);
    }
    exit(1);
  },
);
