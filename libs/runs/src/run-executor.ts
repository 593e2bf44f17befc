import { Injectable, Logger } from '@nestjs/common';

import { isDatabaseUnavailable } from '@app/database';
import { MemoriesService } from '@app/memories';
import { CancellationIntents, JobStopped } from '@app/queue';
import { RecordedSpan, RUN_ATTRIBUTES, RunTrace, SPAN } from '@app/traces';
import { storableText } from '@app/validation';

import { Component, ModelUsage, RunCancelled, RunContext, RunMemories, RunSpan } from './component';
import { RunOutcome, RunRepository } from './run.repository';

export interface RunInput {
  id: string;
  sessionId: string;
  userId: string | null;
  message: string;
  /** False for a run that opened its session: there is no history to read. */
  continuesSession: boolean;
}

export interface ExecutionOptions {
  /** Content as the component produces it (stream=true). */
  onDelta?: (delta: string) => void;
  /** The cancellation point to use instead of the intent check (a queue job's, which also knows when the worker lost the job). */
  checkpoint?: () => Promise<void>;
  /**
   * Aborted when the run must end now: a queue job lost, or its worker stopping past its deadline, or the api stopping
   * with a run it executes. ctx.signal aborts with it, and a checkpoint cancels the run at once, even one waiting on
   * the database (which may be why it stops). Its reason is the run's error: a string, or the RunCancelled to end with.
   */
  signal?: () => AbortSignal;
  /** The run's trace, which its component span joins (Tracing.runTrace); none records no spans. */
  trace?: RunTrace;
}

/** How often a run whose component holds `ctx.signal` checks whether it was cancelled meanwhile. */
const CANCEL_POLL_MS = 500;

/** The largest token count an integer column holds. */
const MAX_TOKENS = 2_147_483_647;
/** The model column's length. */
const MAX_MODEL_LENGTH = 255;

/**
 * A component's answer as the run's content: text as it came (less what PostgreSQL cannot store), anything else
 * as its JSON. One that has none (a BigInt, a cycle) fails its own run here: in a worker's batched write it
 * would have failed every outcome written with it.
 */
function storableContent(returned: unknown): string | null {
  if (typeof returned === 'string') {
    return storableText(returned);
  }
  let json: string | undefined;
  try {
    json = returned === undefined || returned === null ? undefined : JSON.stringify(returned);
  } catch (error) {
    throw new Error(`The component's answer cannot be stored as text: ${(error as Error).message}`, { cause: error });
  }
  return json === undefined ? null : storableText(json);
}

/**
 * What a component reported of its model calls, as the run's columns can hold it: counts are whole, not negative and
 * within the column, or unknown (a count past it is no real one, and clamped it would read as one in a usage sum).
 */
function storableUsage(reported: ModelUsage | null | undefined): ModelUsage | null {
  if (!reported || typeof reported !== 'object') {
    return null;
  }
  const count = (value: unknown): number | null =>
    typeof value === 'number' && value >= 0 && Math.round(value) <= MAX_TOKENS ? Math.round(value) : null;
  return {
    model: storableText(String(reported.model ?? '').slice(0, MAX_MODEL_LENGTH)),
    inputTokens: count(reported.inputTokens),
    outputTokens: count(reported.outputTokens),
  };
}

/** Runs one component for one run and turns whatever happens into an outcome; never throws for a component's failure. */
@Injectable()
export class RunExecutor {
  private readonly logger = new Logger('Runs');

  constructor(
    private readonly intents: CancellationIntents,
    private readonly runs: RunRepository,
    private readonly memories: MemoriesService,
  ) {}

  /** The outcome carries the spans the run's trace recorded, its component span last, for the outcome's write to store. */
  async execute(component: Component, run: RunInput, options: ExecutionOptions = {}): Promise<RunOutcome> {
    const trace = options.trace ?? RunTrace.NONE;
    const span = trace.start(SPAN.component, {
      // The session and user are the request span's: a trace says them once.
      attributes: {
        [RUN_ATTRIBUTES.runId]: run.id,
        [RUN_ATTRIBUTES.componentType]: component.kind,
        [RUN_ATTRIBUTES.componentId]: component.id,
      },
    });
    const outcome = await this.runComponent(component, run, options, trace, span);
    span.setAttributes({ [RUN_ATTRIBUTES.status]: outcome.status });
    if (outcome.status === 'failed') {
      span.fail(outcome.error);
      // Named by its component, in the api and in a worker alike: which component fails is what an operator looks for.
      this.logger.warn(
        { run_id: run.id, component_type: component.kind, component_id: component.id, error: outcome.error },
        `run failed: ${component.kind} ${component.id}`,
      );
    }
    span.end();
    return { ...outcome, spans: trace.storedSpans() };
  }

  private async runComponent(
    component: Component,
    run: RunInput,
    options: ExecutionOptions,
    trace: RunTrace,
    span: RecordedSpan,
  ): Promise<RunOutcome> {
    const history = run.continuesSession ? await this.runs.history(run.sessionId, run.id) : [];
    const stop = new Stop(options.checkpoint ?? (() => this.checkpoint(run.id)), options.signal);
    let usage: ModelUsage | null = null;
    let memories: RunMemories | null = null;
    const forRun = (): RunMemories => ({
      list: () => this.memories.latestOf(run.userId),
      add: (memory, topics) => this.memories.addFor(run.userId, component, memory, topics),
    });
    const context: RunContext = {
      runId: run.id,
      sessionId: run.sessionId,
      userId: run.userId,
      message: run.message,
      history,
      get signal() {
        return stop.signal;
      },
      get memories() {
        return (memories ??= forRun());
      },
      checkpoint: () => stop.checkpoint(),
      span: (name, attributes) => this.childSpan(trace, span, run.id, name, attributes),
      emit: (delta) => options.onDelta?.(delta),
      recordUsage: (reported) => {
        usage = storableUsage(reported);
      },
    };
    try {
      // Stored as it came, but for what PostgreSQL cannot hold (one NUL would fail the write, and in a worker the
      // whole batch of outcomes it went in).
      const content = storableContent(await component.run(context));
      return { status: 'completed', content, error: null, usage };
    } catch (error) {
      if (error instanceof RunCancelled || error instanceof JobStopped || stop.stopped) {
        return { status: 'cancelled', content: null, error: storableText(stop.reason ?? (error as Error).message), usage };
      }
      return { status: 'failed', content: null, error: storableText(error instanceof Error ? error.message : String(error)), usage };
    } finally {
      stop.dispose();
    }
  }

  /**
   * A span of the component's (a model call, or its own through ctx.span), named with the run it belongs
   * to, last, so that neither its attributes nor later ones re-attribute it: GET /traces shows a span
   * to the user whose run it names.
   */
  private childSpan(
    trace: RunTrace,
    parent: RecordedSpan,
    runId: string,
    name: string,
    attributes?: Record<string, string | number | boolean>,
  ): RunSpan {
    const run = { [RUN_ATTRIBUTES.runId]: runId };
    const span = trace.start(String(name), { parent, attributes: { ...attributes, ...run } });
    return {
      set: (more) => span.setAttributes({ ...more, ...run }),
      end: (error) => {
        if (error !== undefined) {
          span.fail(error);
        }
        span.end();
      },
    };
  }

  private async checkpoint(runId: string): Promise<void> {
    if (await this.intents.isLive(runId)) {
      throw new RunCancelled('Run was cancelled');
    }
  }
}

/**
 * One run's cancellation: the checkpoint a component calls, and the AbortSignal it may hold. The
 * signal (and the check that notices a cancellation between checkpoints) exists only once read.
 * Only a cancellation, a lost job or the api stopping aborts it: a check that fails (the database is
 * briefly away) is not a cancellation, and the next check tries again.
 */
class Stop {
  private controller: AbortController | null = null;
  private timer: NodeJS.Timeout | null = null;
  private disposed = false;
  reason: string | null = null;

  constructor(
    private readonly check: () => Promise<void>,
    private readonly outer: (() => AbortSignal) | undefined,
  ) {}

  get stopped(): boolean {
    return this.reason !== null;
  }

  get signal(): AbortSignal {
    if (!this.controller) {
      this.controller = new AbortController();
      if (this.reason !== null) {
        this.controller.abort(new RunCancelled(this.reason));
      }
      const outer = this.outer?.();
      if (outer?.aborted) {
        this.abort(stoppedBy(outer));
      }
      outer?.addEventListener('abort', () => this.abort(stoppedBy(outer)), { once: true });
      this.schedule();
    }
    return this.controller.signal;
  }

  async checkpoint(): Promise<void> {
    try {
      await this.checkUnlessStopped();
    } catch (error) {
      if (error instanceof RunCancelled || error instanceof JobStopped) {
        this.abort(error);
      } else if (isDatabaseUnavailable(error)) {
        // Not a cancellation: the run goes on, and its next checkpoint asks again.
        return;
      }
      throw error;
    }
  }

  dispose(): void {
    this.disposed = true;
    if (this.timer) {
      clearTimeout(this.timer);
    }
  }

  /** The next background check, once the previous one has answered: never two at once, none after the run. */
  private schedule(): void {
    if (this.disposed || this.reason !== null) {
      return;
    }
    this.timer = setTimeout(() => {
      void this.checkpoint()
        .catch(() => undefined)
        .finally(() => this.schedule());
    }, CANCEL_POLL_MS);
    this.timer.unref();
  }

  /** The check, cut short when the run must end (before or during it): a database that hangs must not hold a stop. */
  private async checkUnlessStopped(): Promise<void> {
    const outer = this.outer?.();
    if (!outer) {
      return this.check();
    }
    if (outer.aborted) {
      throw stoppedBy(outer);
    }
    let onAbort = (): void => undefined;
    const stopped = new Promise<never>((_, reject) => {
      onAbort = () => reject(stoppedBy(outer));
      outer.addEventListener('abort', onAbort, { once: true });
    });
    try {
      await Promise.race([this.check(), stopped]);
    } finally {
      outer.removeEventListener('abort', onAbort);
    }
  }

  private abort(error: Error): void {
    this.reason ??= error.message;
    this.dispose();
    this.controller?.abort(error);
  }
}

/** Why a run must end, from the signal that says so: a job's reason (a string), or the RunCancelled the api stops it with. */
function stoppedBy(signal: AbortSignal): Error {
  return signal.reason instanceof RunCancelled ? signal.reason : new JobStopped(String(signal.reason));
}
