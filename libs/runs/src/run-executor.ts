import { Injectable } from '@nestjs/common';

import { CancellationIntents, JobStopped } from '@app/queue';

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
  /** The cancellation point to use instead of the intent check (a queue job's, which also knows when the worker lost the job). */
  checkpoint?: () => Promise<void>;
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
      checkpoint: options.checkpoint ?? (() => this.checkpoint(run.id)),
      emit: (delta) => options.onDelta?.(delta),
    };
    try {
      const content = await component.run(context);
      return { status: 'completed', content, error: null };
    } catch (error) {
      if (error instanceof RunCancelled || error instanceof JobStopped) {
        return { status: 'cancelled', content: null, error: error.message };
      }
      return { status: 'failed', content: null, error: error instanceof Error ? error.message : String(error) };
    }
  }

  private async checkpoint(runId: string): Promise<void> {
    if (await this.intents.isLive(runId)) {
      throw new RunCancelled('Run was cancelled');
    }
  }
}
