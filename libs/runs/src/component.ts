export const COMPONENT_KINDS = ['agent', 'team', 'workflow'] as const;
export type ComponentKind = (typeof COMPONENT_KINDS)[number];

/** What a component sees of the run it executes. */
export interface RunContext {
  readonly runId: string;
  readonly sessionId: string;
  readonly userId: string | null;
  readonly message: string;
  /**
   * A cooperative cancellation point: throws RunCancelled when the run's cancellation was
   * requested (or its worker lost the job). Long-running components call it between steps.
   */
  checkpoint(): Promise<void>;
  /** Sends a piece of content to a `stream=true` caller as it is produced; a no-op otherwise. */
  emit(delta: string): void;
}

/**
 * An agent, team or workflow. A deployment registers its own (RunsModule.forRoot({ components }));
 * `run` resolves to the run's content, or throws to fail the run.
 */
export interface Component {
  readonly kind: ComponentKind;
  readonly id: string;
  readonly name: string;
  readonly description: string;
  run(context: RunContext): Promise<string>;
}

/** Thrown by RunContext.checkpoint: the run stops and is recorded as cancelled. */
export class RunCancelled extends Error {
  constructor(reason = 'Run was cancelled') {
    super(reason);
    this.name = 'RunCancelled';
  }
}
