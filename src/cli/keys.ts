import { Command, Option } from 'commander';
import type { Writable } from 'node:stream';
import { ApiKeyStore, type ApiKeyInfo } from '../auth/apiKeys.js';
import { ROLES, type Role } from '../auth/roles.js';

/** Where the command writes, and how it reports its exit status (tests pass their own). */
export interface KeysIo {
  stdout: Writable;
  stderr: Writable;
  env: Record<string, string | undefined>;
  setExitCode(code: number): void;
}

const defaultIo = (): KeysIo => ({
  stdout: process.stdout,
  stderr: process.stderr,
  env: process.env,
  setExitCode: (code) => {
    process.exitCode = code;
  },
});

function table(keys: Array<Omit<ApiKeyInfo, 'source'>>): string {
  const rows = [
    ['ID', 'NAME', 'ROLE', 'CREATED', 'LAST USED', 'STATUS'],
    ...keys.map((k) => [k.id, k.name, k.role, k.createdAt, k.lastUsedAt ?? '-', k.revokedAt ? `revoked ${k.revokedAt}` : 'active']),
  ];
  const widths = rows[0]!.map((_, c) => Math.max(...rows.map((r) => r[c]!.length)));
  return rows.map((r) => r.map((cell, c) => (c === r.length - 1 ? cell : cell.padEnd(widths[c]!))).join('  ')).join('\n') + '\n';
}

/**
 * `csipose keys`: manage API keys in `<data-dir>/api_keys.json`, also while the server runs (it
 * notices the change within a second). Keys from CSIPOSE_API_KEYS are not managed here.
 *
 * - `keys create --role ROLE [--name N]` prints the new key on stdout, alone on its line so that
 *   `KEY=$(csipose keys create --role viewer)` works; the note that it cannot be shown again goes
 *   to stderr.
 * - `keys list [--json]` shows ids, names, roles, dates; never a secret.
 * - `keys revoke ID` revokes; exit status 1 when there is no such key.
 *
 * `--data-dir` defaults to CSIPOSE_DATA_DIR, else `./data`.
 * @param io output streams, env and exit status (default: the process's)
 * @returns the `keys` command, to register with `program.addCommand(keysCommand())`
 */
export function keysCommand(io: KeysIo = defaultIo()): Command {
  const dataDir = () => new Option('--data-dir <dir>', 'data directory (env CSIPOSE_DATA_DIR)').default(io.env.CSIPOSE_DATA_DIR || './data');
  const open = (dir: string) => {
    const store = new ApiKeyStore(dir);
    store.load();
    return store;
  };
  const fail = (e: unknown) => {
    io.stderr.write(`csipose keys: ${(e as Error).message ?? String(e)}\n`);
    io.setExitCode(1);
  };

  const keys = new Command('keys').description('manage API keys (stored hashed in DATA_DIR/api_keys.json)');

  keys
    .command('create')
    .description('create an API key and print it once')
    .addOption(new Option('--role <role>', 'role of the key').choices(ROLES).makeOptionMandatory())
    .option('--name <name>', 'a label for the key')
    .addOption(dataDir())
    .action((o: { role: Role; name?: string; dataDir: string }) => {
      try {
        const { key, info } = open(o.dataDir).create(o.role, o.name);
        io.stdout.write(`${key}\n`);
        io.stderr.write(
          `created API key ${info.id} (${info.name}, role ${info.role}). Store it now: it cannot be shown again.\n` +
            `Send it as header "X-API-Key: <key>" or "Authorization: Bearer <key>".\n`,
        );
      } catch (e) {
        fail(e);
      }
    });

  keys
    .command('list')
    .description('list API keys (never their secrets)')
    .option('--json', 'as JSON')
    .addOption(dataDir())
    .action((o: { json?: boolean; dataDir: string }) => {
      try {
        const list = open(o.dataDir)
          .list()
          .map(({ source: _source, ...k }) => k);
        if (o.json) io.stdout.write(JSON.stringify(list, null, 2) + '\n');
        else if (list.length === 0) io.stdout.write('no API keys\n');
        else io.stdout.write(table(list));
      } catch (e) {
        fail(e);
      }
    });

  keys
    .command('revoke')
    .description('revoke an API key')
    .argument('<id>', 'the key id (the 8 characters after csk_)')
    .addOption(dataDir())
    .action((id: string, o: { dataDir: string }) => {
      try {
        const r = open(o.dataDir).revoke(id);
        if (r === 'revoked') io.stdout.write(`revoked API key ${id}\n`);
        else if (r === 'already_revoked') io.stdout.write(`API key ${id} was already revoked\n`);
        else {
          io.stderr.write(`csipose keys: no API key with id "${id}"\n`);
          io.setExitCode(1);
        }
      } catch (e) {
        fail(e);
      }
    });

  return keys;
}
