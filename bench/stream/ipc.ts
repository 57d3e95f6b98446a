/**
 * Request/reply over Node's child-process IPC channel for the stream benchmark: the orchestrator
 * (`bench/stream.ts`) drives a server process and a client process with small commands, and every
 * command gets exactly one reply. Messages use the `advanced` serialisation (structured clone), so
 * receive times travel as Float64Arrays instead of JSON text.
 */
import { fork, type ChildProcess } from 'node:child_process';

/** One command to a child. */
export interface Request {
  id: number;
  cmd: string;
  // IPC boundary: each command's arguments are checked by the handler that takes them.
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- whatever the command takes, typed by its handler
  args: any;
}

/** The child's answer to one command. */
export interface Reply {
  id: number;
  ok: boolean;
  // IPC boundary: the result's type is the one the command's caller asks `call` for.
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- typed by the caller of `call`
  result?: any;
  error?: string;
}

/** Children alive now: killed when this process exits, however it exits. */
const alive = new Set<ChildProcess>();
let hooked = false;

/** Kills every child still alive (on exit, Ctrl-C or SIGTERM of the orchestrator). */
function killAll(): void {
  for (const c of alive) c.kill('SIGKILL');
}

/** Installs the exit hooks once, at the first fork. */
function hookExit(): void {
  if (hooked) return;
  hooked = true;
  process.on('exit', killAll);
  for (const sig of ['SIGINT', 'SIGTERM'] as const) {
    process.on(sig, () => {
      killAll();
      process.exit(130);
    });
  }
}

/** A forked child that answers commands. */
export class Child {
  private seq = 0;
  private readonly pending = new Map<number, { ok: (v: unknown) => void; fail: (e: Error) => void; cmd: string }>();
  private exited: string | undefined;
  private readonly proc: ChildProcess;
  readonly exit: Promise<void>;
  /** What the child announced once it was up (see {@link announce}). */
  readonly ready: Promise<unknown>;
  private onReady: (v: unknown) => void = () => undefined;
  private failReady: (e: Error) => void = () => undefined;

  /**
   * Forks a compiled module (its stdout goes to our stderr, so `--json` output stays clean).
   * @param file absolute path of the child's `.js`
   * @param args its argv
   */
  constructor(
    readonly name: string,
    file: string,
    args: string[] = [],
  ) {
    hookExit();
    const proc = fork(file, args, { serialization: 'advanced', stdio: ['ignore', 2, 2, 'ipc'] });
    this.proc = proc;
    alive.add(proc);
    this.ready = new Promise((ok, fail) => {
      this.onReady = ok;
      this.failReady = fail;
    });
    // Awaited by the orchestrator; this keeps an early exit from being an unhandled rejection too.
    this.ready.catch(() => undefined);
    proc.on('message', (m: Reply) => {
      if (m.id === 0) {
        this.onReady(m.result);
        return;
      }
      const p = this.pending.get(m.id);
      if (!p) return;
      this.pending.delete(m.id);
      if (m.ok) p.ok(m.result);
      else p.fail(new Error(`${this.name} ${p.cmd}: ${m.error}`));
    });
    this.exit = new Promise((done) => {
      proc.once('exit', (code, signal) => {
        alive.delete(proc);
        this.exited = `${this.name} exited (code ${code}, signal ${signal})`;
        for (const p of this.pending.values()) p.fail(new Error(`${this.exited} during ${p.cmd}`));
        this.failReady(new Error(`${this.exited} before it was up`));
        this.pending.clear();
        done();
      });
    });
  }

  /**
   * Sends a command and waits for its reply.
   * @param cmd the command name
   * @param args its arguments
   * @param timeoutMs a safety net against a hung child (not a measurement)
   */
  call<T>(cmd: string, args: unknown = {}, timeoutMs = 120_000): Promise<T> {
    if (this.exited) return Promise.reject(new Error(`${this.exited}; cannot ${cmd}`));
    const id = ++this.seq;
    return new Promise<T>((ok, fail) => {
      const t = setTimeout(() => {
        this.pending.delete(id);
        fail(new Error(`${this.name} did not answer ${cmd} within ${timeoutMs} ms`));
      }, timeoutMs);
      this.pending.set(id, {
        cmd,
        ok: (v) => {
          clearTimeout(t);
          ok(v as T);
        },
        fail: (e) => {
          clearTimeout(t);
          fail(e);
        },
      });
      this.proc.send({ id, cmd, args } satisfies Request);
    });
  }

  /** Asks the child to stop (`stop` command), then kills it if it has not exited within `graceMs`. */
  async stop(graceMs = 15_000): Promise<void> {
    if (this.exited) return;
    const timer = setTimeout(() => this.proc.kill('SIGKILL'), graceMs);
    await this.call('stop', {}, graceMs).catch(() => undefined);
    await this.exit;
    clearTimeout(timer);
  }
}

/**
 * The child side: answers each command with its handler's result (or error). The child exits
 * when its parent goes away, so no benchmark process outlives a crashed orchestrator.
 * @param handlers command name -> handler (`stop` must end with the process exiting)
 */
// IPC boundary: each handler reads its own arguments (typed in its signature).
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- handlers of different argument types in one table
export function serve(handlers: Record<string, (args: any) => unknown>): void {
  process.on('disconnect', () => process.exit(0));
  process.on('message', (m: Request) => {
    const h = handlers[m.cmd];
    const reply = (r: Omit<Reply, 'id'>) => process.send?.({ id: m.id, ...r } satisfies Reply);
    if (!h) {
      reply({ ok: false, error: `unknown command ${m.cmd}` });
      return;
    }
    Promise.resolve()
      .then(() => h(m.args))
      .then(
        (result) => reply({ ok: true, result }),
        (e: unknown) => reply({ ok: false, error: (e as Error)?.stack ?? String(e) }),
      );
  });
}

/** Tells the parent that this child is up and serving commands (resolves its `Child.ready`). */
export function announce(info: unknown): void {
  process.send?.({ id: 0, ok: true, result: info } satisfies Reply);
}

/** Resolves after `ms`. */
export const sleep = (ms: number): Promise<void> => new Promise((ok) => setTimeout(ok, ms));

/** Wall-clock time in ms with sub-ms resolution, comparable between processes of this machine. */
export const now = (): number => performance.timeOrigin + performance.now();
