// Relative, not '@app/access': a components module outside the checkout type-checks against this file (through
// authoring.ts) without the checkout's tsconfig, so without its path aliases.
import type { ComponentKind } from '../../access/src/component-kind';

export { COMPONENT_KINDS, type ComponentKind } from '../../access/src/component-kind';

/** One message of the session's earlier turns (a turn is the user's message and the component's answer). */
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

/** A fact kept about a user (the body of `GET /memories/{id}`). */
export interface Memory {
  readonly memory_id: string;
  readonly memory: string;
  readonly topics: readonly string[];
  readonly user_id: string | null;
  readonly component_type: string | null;
  readonly component_id: string | null;
  readonly created_at: number;
  readonly updated_at: number;
}

/** `ctx.memories`: always the run's user's, whatever the component asks. */
export interface RunMemories {
  /** The user's latest memories, newest first (at most 100). */
  list(): Promise<Memory[]>;
  /** Keeps a memory for the user, attributed to this component; throws (failing the run unless caught) on a bad memory or topics. */
  add(memory: string, topics?: string[]): Promise<Memory>;
}

/** A step of a run in its trace (GET /traces, and OpenTelemetry when exported). */
export interface RunSpan {
  /** Adds attributes (e.g. what a step produced). */
  set(attributes: Record<string, string | number | boolean>): void;
  /** Ends the span; with an error it is marked failed with the error's message. */
  end(error?: unknown): void;
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
  /** The run's user's memories: read them, and keep new ones (attributed to this component). */
  readonly memories: RunMemories;
  /** Starts a span for a step of this run, a child of the run's component span (modelAgent records each model call). */
  span(name: string, attributes?: Record<string, string | number | boolean>): RunSpan;
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
  /** What the platform says at boot about this component, as a warning (a model agent whose key variable is unset). */
  readonly bootWarning?: string;
  run(context: RunContext): Promise<string>;
}

/** Thrown by RunContext.checkpoint: the run stops and is recorded as cancelled. */
export class RunCancelled extends Error {
  constructor(reason = 'Run was cancelled') {
    super(reason);
    this.name = 'RunCancelled';
  }
}
