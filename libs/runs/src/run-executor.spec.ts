import { describe, expect, it } from 'vitest';

import { Env } from '@app/config';
import { Tracing } from '@app/traces';

import { Component, RunCancelled } from './component';
import { RunExecutor } from './run-executor';

/** A run that holds ctx.signal and finishes after `ms` unless the signal aborts first. */
function waiting(ms: number): Component {
  return {
    kind: 'agent',
    id: 'waiting',
    name: 'Waiting',
    run: (ctx) =>
      new Promise((resolve, reject) => {
        const timer = setTimeout(() => resolve('done'), ms);
        ctx.signal.addEventListener('abort', () => (clearTimeout(timer), reject(ctx.signal.reason)));
      }),
  };
}

const input = { id: 'r', sessionId: 's', userId: null, message: 'm', continuesSession: false };
// The run's own collaborators are not reached: no history is read and the checkpoint is given.
const executor = new RunExecutor(
  null as never,
  null as never,
  null as never,
  new Tracing(Object.assign(new Env(), { TRACES_ENABLED: false }), null as never, 'test'),
);

describe('RunExecutor: the run’s signal', () => {
  it('is not aborted when a cancellation check fails: the run finishes', async () => {
    let calls = 0;
    const flaky = async () => {
      calls += 1;
      if (calls === 1) {
        throw new Error('Connection terminated unexpectedly');
      }
    };
    const outcome = await executor.execute(waiting(1300), input, { checkpoint: flaky });
    expect(outcome).toMatchObject({ status: 'completed', content: 'done' });
    expect(calls).toBeGreaterThanOrEqual(2);
  });

  it('is aborted by a cancellation found between checkpoints, and the run ends cancelled', async () => {
    const cancelled = async () => {
      throw new RunCancelled('Run was cancelled');
    };
    const outcome = await executor.execute(waiting(10_000), input, { checkpoint: cancelled });
    expect(outcome).toMatchObject({ status: 'cancelled', error: 'Run was cancelled' });
  });

  it('is aborted when the job is lost', async () => {
    const lost = new AbortController();
    setTimeout(() => lost.abort('lock lost'), 100);
    const outcome = await executor.execute(waiting(10_000), input, { checkpoint: async () => undefined, signal: () => lost.signal });
    expect(outcome.status).toBe('cancelled');
    expect(outcome.error).toContain('lock lost');
  });
});
