import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { loadBootConfig } from '../config/load-config.js';
import { AppError } from '../http/app-error.js';
import { COMPONENTS, type Component } from './backup-manifest.js';
import { type BackupOrigin, BackupService, FULL } from './backup-service.js';
import { sizeMb, toComponents } from './backup-views.js';

export const BACKUP_USAGE = `Usage: platform backup <create|list|import|restore> [options]

  platform backup create [--include configuration,database,plugins,logs] [--name <name>]
                         [--no-compression] [--encrypt]
  platform backup list
  platform backup import <file>          add an archive written elsewhere (another installation or dialect)
  platform backup restore <backup_id> --confirm [--components database,configuration,plugins]
                         [--no-safety-backup]

Works on the configured storage directly; the HTTP server need not run. In embedded mode (SQLite), stop
the server before a restore: its caches would not see the change. Options: --config <file>, -h.`;

interface Io {
  out: (text: string) => void;
  err: (text: string) => void;
}

const ORIGIN: BackupOrigin = { userId: null, username: 'cli' };

/** `platform backup …`: the same service the HTTP routes use, on a platform assembled without listening. */
export async function backupCommand(argv: string[], io: Io): Promise<number> {
  let args: ReturnType<typeof parse>;
  try {
    args = parse(argv);
  } catch (e) {
    io.err(`${(e as Error).message}\n\n${BACKUP_USAGE}\n`);
    return 2;
  }
  const { values, positionals } = args;
  const [sub, id, ...extra] = positionals;
  if (values.help || !sub || extra.length > 0) {
    (values.help ? io.out : io.err)(`${BACKUP_USAGE}\n`);
    return values.help ? 0 : 2;
  }
  const takesArgument = sub === 'restore' || sub === 'import';
  if (!['create', 'list', 'restore', 'import'].includes(sub) || takesArgument !== (id !== undefined)) {
    io.err(`${BACKUP_USAGE}\n`);
    return 2;
  }
  let includes: Component[] | undefined;
  let components: Component[] | undefined;
  try {
    includes = values.include ? componentList(values.include) : undefined;
    components = values.components ? componentList(values.components) : undefined;
  } catch (e) {
    io.err(`${(e as Error).message}\n`);
    return 2;
  }
  if (sub === 'restore' && !values.confirm) {
    io.err('a restore replaces current data; add --confirm to go ahead\n');
    return 2;
  }

  const boot = loadBootConfig({
    ...(values.config ? { configFile: values.config } : {}),
    overrides: { logging: { level: 'silent' } },
  });
  // Loaded here, so usage errors answer without assembling the platform.
  const { createPlatform } = await import('../server.js');
  const platform = await createPlatform({ boot, print: () => {} });
  try {
    const service = platform.context.registry.get('backups');
    if (!(service instanceof BackupService)) throw new Error('the backups service is not available');
    switch (sub) {
      case 'create': {
        const accepted = await service.create(
          {
            name: values.name,
            includes: includes ?? FULL,
            compression: !values['no-compression'],
            encryption: values.encrypt ?? false,
          },
          ORIGIN,
        );
        // The archive is written by a task; the command waits for it to end.
        const row = await service.backupSettled(accepted.id);
        if (row.status !== 'completed') {
          io.err(`backup ${row.id} ${row.status}: ${row.error ?? 'unknown error'}\n`);
          return 1;
        }
        io.out(`${row.id}  ${row.file_name}  ${sizeMb(Number(row.size_bytes))} MB  sha256 ${row.sha256}\n`);
        return 0;
      }
      case 'list': {
        const rows = await service.list();
        if (rows.length === 0) io.out('no backups\n');
        for (const r of rows) {
          io.out(
            `${r.id}  ${r.created_at}  ${r.type.padEnd(9)}  ${r.status.padEnd(9)}  ` +
              `${String(sizeMb(Number(r.size_bytes))).padStart(10)} MB  ${JSON.parse(r.includes).join(',')}  ${r.name}\n`,
          );
        }
        return 0;
      }
      case 'import': {
        const row = await service.importArchive(resolve(id as string), ORIGIN);
        io.out(`${row.id}  imported as ${row.file_name}  (${JSON.parse(row.includes).join(', ')})\n`);
        return 0;
      }
      default: {
        const started = await service.startRestore(
          id as string,
          { components, safetyBackup: !values['no-safety-backup'] },
          ORIGIN,
        );
        io.out(
          `restore ${started.restore_id} of ${started.backup_id} started (${started.components.join(', ')})\n`,
        );
        const outcome = await service.restoreSettled(started.restore_id);
        if (outcome.status === 'completed') {
          io.out(`restore ${started.restore_id} completed\n`);
          return 0;
        }
        io.err(`restore ${started.restore_id} ${outcome.status}: ${outcome.error ?? 'unknown error'}\n`);
        return 1;
      }
    }
  } catch (e) {
    if (e instanceof AppError) {
      io.err(`${e.code}: ${e.message}${e.details ? ` ${JSON.stringify(e.details)}` : ''}\n`);
      return 1;
    }
    throw e;
  } finally {
    await platform.close();
  }
}

function componentList(values: string[]): Component[] {
  const names = values
    .flatMap((v) => v.split(','))
    .map((s) => s.trim())
    .filter(Boolean);
  const unknown = names.filter((n) => n !== 'config' && !(COMPONENTS as readonly string[]).includes(n));
  if (unknown.length > 0)
    throw new Error(`unknown component(s): ${unknown.join(', ')} (use ${COMPONENTS.join(', ')})`);
  return toComponents(names);
}

function parse(argv: string[]) {
  return parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      config: { type: 'string' },
      include: { type: 'string', multiple: true },
      components: { type: 'string', multiple: true },
      name: { type: 'string' },
      'no-compression': { type: 'boolean' },
      encrypt: { type: 'boolean' },
      confirm: { type: 'boolean' },
      'no-safety-backup': { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
  });
}
