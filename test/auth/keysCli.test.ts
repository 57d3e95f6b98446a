import { Writable } from 'node:stream';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ApiKeyStore } from '../../src/auth/apiKeys.js';
import { keysCommand, type KeysIo } from '../../src/cli/keys.js';
import { tempDir } from './helpers.js';

function sink(): Writable & { text: string } {
  const w = new Writable({
    write(chunk, _enc, cb) {
      w.text += String(chunk);
      cb();
    },
  }) as Writable & { text: string };
  w.text = '';
  return w;
}

describe('csipose keys', () => {
  let tmp: ReturnType<typeof tempDir>;
  beforeEach(() => (tmp = tempDir()));
  afterEach(() => tmp.cleanup());

  async function run(args: string[], env: Record<string, string | undefined> = {}) {
    const io: KeysIo & { code: number } = {
      stdout: sink(),
      stderr: sink(),
      env,
      code: 0,
      setExitCode(c) {
        io.code = c;
      },
    };
    const cmd = keysCommand(io);
    for (const c of cmd.commands) c.exitOverride().configureOutput({ writeErr: (s) => io.stderr.write(s), writeOut: (s) => io.stdout.write(s) });
    await cmd.parseAsync(args, { from: 'user' });
    return { out: (io.stdout as ReturnType<typeof sink>).text, err: (io.stderr as ReturnType<typeof sink>).text, code: io.code };
  }

  it('create prints the key alone on stdout once, with a note on stderr; the key works', async () => {
    const r = await run(['create', '--role', 'operator', '--name', 'ci', '--data-dir', tmp.dir]);
    expect(r.code).toBe(0);
    expect(r.out).toMatch(/^csk_[a-z0-9]{8}_[A-Za-z0-9_-]{43}\n$/);
    expect(r.err).toMatch(/cannot be shown again/);
    const store = new ApiKeyStore(tmp.dir);
    store.load();
    expect(store.verify(r.out.trim())).toMatchObject({ ok: true, key: { name: 'ci', role: 'operator' } });
  });

  it('list shows keys without secrets, as a table or JSON; revoke marks them', async () => {
    const created = await run(['create', '--role', 'viewer', '--name', 'grafana', '--data-dir', tmp.dir]);
    const id = created.out.slice(4, 12);
    const secret = created.out.trim().slice(13);
    const table = await run(['list', '--data-dir', tmp.dir]);
    expect(table.out).toMatch(/^ID\s+NAME\s+ROLE\s+CREATED\s+LAST USED\s+STATUS\n/);
    expect(table.out).toContain(`${id}  grafana  viewer`);
    expect(table.out).toMatch(/active\n$/);
    expect(table.out).not.toContain(secret);

    expect(await run(['revoke', id, '--data-dir', tmp.dir])).toMatchObject({ code: 0, out: `revoked API key ${id}\n` });
    expect((await run(['revoke', id, '--data-dir', tmp.dir])).out).toMatch(/already revoked/);
    const json = JSON.parse((await run(['list', '--json', '--data-dir', tmp.dir])).out) as Array<Record<string, unknown>>;
    expect(json).toHaveLength(1);
    expect(Object.keys(json[0]!).sort()).toEqual(['createdAt', 'id', 'lastUsedAt', 'name', 'revokedAt', 'role']);
    expect(json[0]).toMatchObject({ id, name: 'grafana', role: 'viewer' });
    expect(json[0]!.revokedAt).toEqual(expect.any(String));
  });

  it('takes the data dir from CSIPOSE_DATA_DIR', async () => {
    const env = { CSIPOSE_DATA_DIR: tmp.dir };
    await run(['create', '--role', 'admin'], env);
    const listed = JSON.parse((await run(['list', '--json'], env)).out) as unknown[];
    expect(listed).toHaveLength(1);
    expect((await run(['list'], { CSIPOSE_DATA_DIR: `${tmp.dir}/empty` })).out).toBe('no API keys\n');
  });

  it('revoke of an unknown id exits 1; a bad role is refused by the parser', async () => {
    const r = await run(['revoke', 'zzzzzzzz', '--data-dir', tmp.dir]);
    expect(r.code).toBe(1);
    expect(r.err).toMatch(/no API key with id "zzzzzzzz"/);
    await expect(run(['create', '--role', 'root', '--data-dir', tmp.dir])).rejects.toThrow(/Allowed choices are viewer, operator, admin/);
    await expect(run(['create', '--data-dir', tmp.dir])).rejects.toThrow(/--role/);
  });
});
