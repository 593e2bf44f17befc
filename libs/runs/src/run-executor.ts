import { Injectable } from '@nestjs/common';

import { CancellationIntents } from '@app/queue';

import { Component, RunCancelled, RunContext } from './component';
import { RunOutcome } from './run.repository';

export interface RunInput {
  id: string;
  sessionId: string;
  userId: string | null;
  message: string;
}

export interface ExecutionOptions {
  /** Content as the component produces it (stream=true). */
  onDelta?: (delta: string) => void;
  /** Aborted when the run must stop for a reason other than a user's cancel (worker lost its lock, shutdown). */
  signal?: AbortSignal;
}

/** Runs one component for one run and turns whatever happens into an outcome; never throws for a component's failure. */
@Injectable()
export class RunExecutor {
  constructor(private readonly intents: CancellationIntents) {}

  async execute(component: Component, run: RunInput, options: ExecutionOptions = {}): Promise<RunOutcome> {
    const context: RunContext = {
      runId: run.id,
      sessionId: run.sessionId,
      userId: run.userId,
      message: run.message,
      checkpoint: () => this.checkpoint(run.id, options.signal),
      emit: (delta) => options.onDelta?.(delta),
    };
    try {
      const content = await component.run(context);
      return { status: 'completed', content, error: null };
    } catch (error) {
      if (error instanceof RunCancelled) {
        return { status: 'cancelled', content: null, error: error.message };
      }
      return { status: 'failed', content: null, error: error instanceof Error ? error.message : String(error) };
    }
  }

  private async checkpoint(runId: string, signal: AbortSignal | undefined): Promise<void> {
    if (signal?.aborted) {
      throw new RunCancelled(String(signal.reason ?? 'Run was stopped'));
    }
    if (await this.intents.isLive(runId)) {
      throw new RunCancelled('Run was cancelled');
    }
  }
}
