import { randomUUID } from 'node:crypto';
import type { Observable, Subscription } from 'rxjs';
import type { CsiFrame } from '../csi/frame.js';
import type { PoseFrame } from '../pose/types.js';

/** DECISIONS "System states". */
export type SystemState = 'stopped' | 'starting' | 'running' | 'stopping' | 'restarting' | 'error';

export interface Step {
  step: string;
  status: 'pending' | 'in_progress' | 'completed' | 'failed';
  progress: number;
  /** Wall-clock ms the step took, once completed. */
  duration_ms?: number;
  error?: string;
}

/** A transition that the current state does not allow (409 SYSTEM_STATE_CONFLICT). */
export class StateConflict extends Error {
  constructor(
    readonly state: SystemState,
    readonly action: string,
  ) {
    super(`cannot ${action} while the system is ${state}`);
    this.name = 'StateConflict';
  }
}

/** A running pipeline session: what `start_pipeline` produced. */
export interface RunningPipeline {
  /** Pose frames out of the live pipeline (hot; already subscribed by the controller). */
  readonly subscription: Subscription;
}

/**
 * The real actions behind each start and stop step. The controller sequences them, reports their
 * progress and keeps the state machine; it holds no pipeline logic itself.
 */
export interface SystemActions {
  /** Loads (or reloads) the model named by the current config. */
  loadModel(): Promise<void>;
  /** Opens the store if it is not open and checks it answers. */
  openStore(): Promise<void>;
  /** Opens the configured source (frames start flowing once the pipeline subscribes). */
  openSource(): Observable<CsiFrame>;
  /** Subscribes the live pipeline to the source; pose frames go to `onPose`, a failure to `onFault`. */
  startPipeline(frames: Observable<CsiFrame>, onPose: (f: PoseFrame) => void, onFault: (e: unknown) => void): Subscription;
  /** Flushes every sink (store, ...) after the pipeline stopped. */
  flushSinks(): Promise<void>;
  /** Releases the model. */
  releaseModel(): Promise<void>;
}

/** One change of state, as `history` keeps it. */
export interface StateChange {
  readonly at: number;
  readonly from: SystemState;
  readonly to: SystemState;
  readonly session_id?: string;
}

export interface Transition {
  status: SystemState;
  session_id: string;
  previous_session_id?: string;
  /** The controller's own steps, updated as they run: read them, never write them. */
  steps: readonly Readonly<Step>[];
  /** Estimated ms until the transition completes (from the last measured durations). */
  estimated_ms: number;
  started: number;
}

const START_STEPS = ['load_model', 'open_store', 'open_source', 'start_pipeline'] as const;
const STOP_STEPS = ['stop_pipeline', 'close_source', 'flush_sinks', 'release_model'] as const;

/**
 * The system lifecycle: stopped -> starting -> running -> stopping -> stopped, running ->
 * restarting -> running, any -> error on a fault (recoverable by start or restart). Start while
 * starting/running/restarting and stop while stopped/stopping answer a StateConflict. Every step is
 * a real action with its measured duration; `status()` reports them.
 *
 * Its state is read-only from outside: it moves only through `start`, `stop` and `restart` (and
 * a fault of the running pipeline), so every change passes the state machine's rules.
 */
export class SystemController {
  private current: SystemState = 'stopped';
  private session: string | undefined;
  private runningSince: number | undefined;
  private ran = false;
  private failure: Readonly<{ code: string; message: string }> | undefined;
  private stepList: Step[] = [];
  private pipeline: Subscription | undefined;
  private transition: Promise<void> = Promise.resolve();
  private lastDurations = new Map<string, number>([
    ['load_model', 300],
    ['open_store', 100],
    ['open_source', 10],
    ['start_pipeline', 10],
    ['stop_pipeline', 10],
    ['close_source', 10],
    ['flush_sinks', 100],
    ['release_model', 10],
  ]);
  private readonly changes: StateChange[] = [];

  constructor(
    private readonly actions: SystemActions,
    private readonly onPose: (f: PoseFrame) => void,
    private readonly onStateChange: (s: SystemState) => void = () => undefined,
  ) {}

  /** The current state (DECISIONS "System states"). */
  get state(): SystemState {
    return this.current;
  }

  /** The session started by the last start or restart; undefined before the first. */
  get sessionId(): string | undefined {
    return this.session;
  }

  /** Epoch ms at which the current session reached `running`; undefined once stopped. */
  get startedAt(): number | undefined {
    return this.runningSince;
  }

  /** True once a session has reached `running`. */
  get everRan(): boolean {
    return this.ran;
  }

  /** The fault that put the system in `error`; undefined after a clean start or stop. */
  get error(): Readonly<{ code: string; message: string }> | undefined {
    return this.failure;
  }

  /** The steps of the last transition, updated as they run (empty before the first). */
  get steps(): readonly Readonly<Step>[] {
    return this.stepList;
  }

  /** Completed transitions, newest last (bounded). */
  get history(): readonly StateChange[] {
    return this.changes;
  }

  private setState(s: SystemState): void {
    if (s === this.current) return;
    this.changes.push({ at: Date.now(), from: this.current, to: s, ...(this.session ? { session_id: this.session } : {}) });
    if (this.changes.length > 200) this.changes.shift();
    this.current = s;
    this.onStateChange(s);
  }

  private estimate(names: readonly string[]): number {
    return names.reduce((a, n) => a + (this.lastDurations.get(n) ?? 0), 0);
  }

  private async runStep(step: Step, fn: () => Promise<void> | void): Promise<void> {
    step.status = 'in_progress';
    step.progress = 0.5;
    const t0 = performance.now();
    try {
      await fn();
    } catch (e) {
      step.status = 'failed';
      step.error = (e as Error).message ?? String(e);
      throw e;
    }
    step.duration_ms = Math.round((performance.now() - t0) * 10) / 10;
    this.lastDurations.set(step.step, step.duration_ms);
    step.status = 'completed';
    step.progress = 1;
  }

  /** Begins a start; resolves with the transition at once, the steps run on. */
  start(): Transition {
    if (this.current === 'starting' || this.current === 'running' || this.current === 'restarting' || this.current === 'stopping')
      throw new StateConflict(this.current, 'start');
    this.session = randomUUID();
    const t = this.beginStart('starting');
    this.transition = this.transition.then(() => this.runStart()).catch(() => undefined);
    return t;
  }

  private beginStart(state: 'starting' | 'restarting'): Transition {
    this.failure = undefined;
    this.stepList = START_STEPS.map((step) => ({ step, status: 'pending', progress: 0 }));
    this.setState(state);
    return { status: state, session_id: this.session!, steps: this.stepList, estimated_ms: this.estimate(START_STEPS), started: Date.now() };
  }

  private async runStart(): Promise<void> {
    const [load, store, source, start] = this.stepList as [Step, Step, Step, Step];
    let frames: Observable<CsiFrame> | undefined;
    try {
      await this.runStep(load, () => this.actions.loadModel());
      await this.runStep(store, () => this.actions.openStore());
      await this.runStep(source, () => {
        frames = this.actions.openSource();
      });
      await this.runStep(start, () => {
        this.pipeline = this.actions.startPipeline(frames!, this.onPose, (e) => this.fault(e));
      });
      if (this.current === 'error') return;
      this.runningSince = Date.now();
      this.ran = true;
      this.setState('running');
    } catch (e) {
      this.fault(e);
    }
  }

  /** Puts the system in `error` (MODEL_ERROR for model faults, SYSTEM_ERROR otherwise) and stops the pipeline. */
  private fault(e: unknown): void {
    const code = (e as { code?: string })?.code === 'MODEL_ERROR' ? 'MODEL_ERROR' : ((e as { code?: string })?.code ?? 'SYSTEM_ERROR');
    this.failure = Object.freeze({
      code: code === 'MODEL_ERROR' || code === 'HARDWARE_ERROR' ? code : 'SYSTEM_ERROR',
      message: (e as Error)?.message ?? String(e),
    });
    this.pipeline?.unsubscribe();
    this.pipeline = undefined;
    this.setState('error');
  }

  /** Begins a stop. */
  stop(): Transition {
    if (this.current === 'stopped' || this.current === 'stopping' || this.current === 'starting' || this.current === 'restarting')
      throw new StateConflict(this.current, 'stop');
    const sessionId = this.session ?? randomUUID();
    this.stepList = STOP_STEPS.map((step) => ({ step, status: 'pending', progress: 0 }));
    this.setState('stopping');
    const t: Transition = { status: 'stopping', session_id: sessionId, steps: this.stepList, estimated_ms: this.estimate(STOP_STEPS), started: Date.now() };
    this.transition = this.transition.then(() => this.runStop()).catch(() => undefined);
    return t;
  }

  private async runStop(): Promise<void> {
    const [stopP, closeS, flush, release] = this.stepList as [Step, Step, Step, Step];
    try {
      await this.runStop4(stopP, closeS, flush, release);
      this.runningSince = undefined;
      // A clean stop ends the faulted session: `stopped` must not keep reporting its error.
      this.failure = undefined;
      this.setState('stopped');
    } catch (e) {
      this.fault(e);
    }
  }

  private async runStop4(stopP: Step, closeS: Step, flush: Step, release: Step): Promise<void> {
    await this.runStep(stopP, () => {
      this.pipeline?.unsubscribe();
      this.pipeline = undefined;
    });
    // Unsubscribing the pipeline closed the source (file, socket or simulator timer).
    await this.runStep(closeS, () => undefined);
    await this.runStep(flush, () => this.actions.flushSinks());
    await this.runStep(release, () => this.actions.releaseModel());
  }

  /** Stops (if needed) and starts again under a new session id. */
  restart(): Transition & { previous_session_id: string | undefined } {
    if (this.current === 'starting' || this.current === 'stopping' || this.current === 'restarting') throw new StateConflict(this.current, 'restart');
    const previous = this.session;
    const wasRunning = this.current === 'running';
    this.session = randomUUID();
    const stopSteps: Step[] = STOP_STEPS.map((step) => ({ step, status: 'pending', progress: 0 }));
    const t = this.beginStart('restarting');
    const all = [...(wasRunning ? stopSteps : []), ...this.stepList];
    this.stepList = all;
    this.transition = this.transition
      .then(async () => {
        try {
          if (wasRunning) await this.runStop4(...(stopSteps as [Step, Step, Step, Step]));
        } catch (e) {
          this.fault(e);
          return;
        }
        this.stepList = all.slice(wasRunning ? 4 : 0);
        await this.runStart();
        this.stepList = all;
      })
      .catch(() => undefined);
    return { ...t, steps: all, estimated_ms: this.estimate([...(wasRunning ? STOP_STEPS : []), ...START_STEPS]), previous_session_id: previous };
  }

  /** Resolves when the transition under way (if any) has finished. */
  settled(): Promise<void> {
    return this.transition;
  }

  /** Seconds the current session has been running; 0 while none runs. */
  uptimeSeconds(): number {
    return this.runningSince ? (Date.now() - this.runningSince) / 1000 : 0;
  }
}
