import { describe, expect, it } from 'vitest';

import { Env } from '@app/config';
import { SPAN, Tracing } from '@app/traces';

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
const executor = new RunExecutor(null as never, null as never, null as never);

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

  it('is aborted when the api stops, and a checkpoint waiting on a database that hangs is cut short: the run ends cancelled', async () => {
    const stop = new AbortController();
    const checkpoints: Component = {
      kind: 'agent',
      id: 'checkpoints',
      name: 'Checkpoints',
      run: async (ctx) => {
        await ctx.checkpoint();
        return 'done';
      },
    };
    setTimeout(() => stop.abort(new RunCancelled()), 100);
    const hanging = () => new Promise<void>(() => undefined);
    const outcome = await executor.execute(checkpoints, input, { checkpoint: hanging, signal: () => stop.signal });
    expect(outcome).toMatchObject({ status: 'cancelled', error: 'Run was cancelled' });
    // Stopped before the run starts: its first checkpoint cancels it, without asking.
    const asked: string[] = [];
    const after = await executor.execute(checkpoints, input, {
      checkpoint: async () => void asked.push('asked'),
      signal: () => stop.signal,
    });
    expect(after).toMatchObject({ status: 'cancelled', error: 'Run was cancelled' });
    expect(asked).toEqual([]);
  });

  it('is aborted when the job is lost', async () => {
    const lost = new AbortController();
    setTimeout(() => lost.abort('lock lost'), 100);
    const outcome = await executor.execute(waiting(10_000), input, { checkpoint: async () => undefined, signal: () => lost.signal });
    expect(outcome.status).toBe('cancelled');
    expect(outcome.error).toContain('lock lost');
  });
});

describe('RunExecutor: the run’s spans', () => {
  const tracing = new Tracing(Object.assign(new Env(), { TRACES_ENABLED: true }), 'test');
  const request = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
  const stepping = (fail: boolean): Component => ({
    kind: 'agent',
    id: 'stepping',
    name: 'Stepping',
    run: async (ctx) => {
      const step = ctx.span('lookup', { 'run.id': 'someone else’s', query: 'q' });
      step.end(fail ? new Error('lookup failed') : undefined);
      if (fail) {
        throw new Error('no answer');
      }
      return 'answer';
    },
  });

  it('come back with the outcome: the component span under the request span, its steps under it, named with the run', async () => {
    const outcome = await executor.execute(stepping(false), input, { checkpoint: async () => undefined, trace: tracing.runTrace(request) });
    expect(outcome.status).toBe('completed');
    const [step, component] = outcome.spans!;
    expect(component).toMatchObject({
      name: SPAN.component,
      parent_id: '00f067aa0ba902b7',
      attributes: { 'run.id': 'r', 'component.type': 'agent', 'component.id': 'stepping', 'run.status': 'completed' },
    });
    expect(step).toMatchObject({ name: 'lookup', parent_id: component.span_id, attributes: { 'run.id': 'r', query: 'q' } });
  });

  it('say a failure, in the step and the component', async () => {
    const outcome = await executor.execute(stepping(true), input, { checkpoint: async () => undefined, trace: tracing.runTrace(request) });
    expect(outcome.status).toBe('failed');
    expect(outcome.spans!.map((span) => span.attributes['otel.status_description'])).toEqual(['lookup failed', 'no answer']);
  });

  it('keep what OpenTelemetry keeps of a component’s attributes, within bounds, so its outcome can always be written', async () => {
    const careless: Component = {
      kind: 'agent',
      id: 'careless',
      name: 'Careless',
      run: async (ctx) => {
        // What a plain-JavaScript component may pass despite the types: kept only where OpenTelemetry would keep it.
        const odd = { big: 10n, object: { a: 1 }, mixed: [1, 'x'], nothing: null, list: ['a', 'b'], long: 'y'.repeat(5000) };
        const step = ctx.span('careless', odd as never);
        step.end();
        step.set({ late: true });
        for (let i = 0; i < 1100; i += 1) {
          ctx.span(`many ${i}`).end();
        }
        return 'done';
      },
    };
    const outcome = await executor.execute(careless, input, { checkpoint: async () => undefined, trace: tracing.runTrace(request) });
    expect(outcome.status).toBe('completed');
    const [step] = outcome.spans!;
    expect(step.attributes).toEqual({ list: ['a', 'b'], long: 'y'.repeat(4096), 'run.id': 'r' });
    // 1,000 steps (the first 999 of the loop's), and the component's own span.
    expect(outcome.spans).toHaveLength(1001);
    expect(outcome.spans!.at(-2)!.name).toBe('many 998');
    expect(outcome.spans!.at(-1)!.name).toBe(SPAN.component);
    expect(() => JSON.stringify(outcome.spans)).not.toThrow();
  });

  it('are none without a trace', async () => {
    const outcome = await executor.execute(stepping(false), input, { checkpoint: async () => undefined });
    expect(outcome.spans).toEqual([]);
  });
});
