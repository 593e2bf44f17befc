export const COMPONENT_KINDS = ['agent', 'team', 'workflow'] as const;
export type ComponentKind = (typeof COMPONENT_KINDS)[number];

/** One earlier turn of the session: the user's message or the component's answer. */
export interface Turn {
  readonly role: 'user' | 'assistant';
  readonly content: string;
}

/** What a model call consumed; stored on the run (`model`, `input_tokens`, `output_tokens`). */
export interface ModelUsage {
  readonly model: string;
  readonly inputTokens: number | null;
  readonly outputTokens: number | null;
}

/** What a component sees of the run it executes. */
export interface RunContext {
  readonly runId: string;
  readonly sessionId: string;
  readonly userId: string | null;
  readonly message: string;
  /** Earlier turns of the session (completed runs before this one), oldest first. */
  readonly history: readonly Turn[];
  /**
   * Aborted when the run is cancelled or its worker lost the job: pass it to anything that can be
   * stopped (fetch, a model call). Created on first use, so components that never read it pay nothing.
   */
  readonly signal: AbortSignal;
  /**
   * A cooperative cancellation point: throws RunCancelled when the run's cancellation was
   * requested (or its worker lost the job). Long-running components call it between steps.
   */
  checkpoint(): Promise<void>;
  /** Sends a piece of content to a `stream=true` caller as it is produced; a no-op otherwise. */
  emit(delta: string): void;
  /** Records what a model call consumed (modelAgent does); the last report is stored on the run. */
  recordUsage(usage: ModelUsage): void;
}

/**
 * An agent, team or workflow. A deployment adds its own with COMPONENTS_MODULE;
 * `run` resolves to the run's content, or throws to fail the run.
 */
export interface Component {
  readonly kind: ComponentKind;
  readonly id: string;
  readonly name: string;
  readonly description?: string;
  run(context: RunContext): Promise<string>;
}

/** Thrown by RunContext.checkpoint: the run stops and is recorded as cancelled. */
export class RunCancelled extends Error {
  constructor(reason = 'Run was cancelled') {
    super(reason);
    this.name = 'RunCancelled';
  }
}
