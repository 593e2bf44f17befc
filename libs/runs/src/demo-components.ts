import { setTimeout as sleep } from 'node:timers/promises';

import { Component, ComponentKind, RunContext } from './component';

const SLEEP_STEP_MS = 100;

function echo(kind: ComponentKind, id: string, name: string): Component {
  return {
    kind,
    id,
    name,
    description: 'Completes with content equal to the message',
    async run(context: RunContext): Promise<string> {
      await context.checkpoint();
      context.emit(context.message);
      return context.message;
    },
  };
}

/** Sleeps `message` seconds (default 1) in short steps, checking for cancellation at every step. */
const sleepAgent: Component = {
  kind: 'agent',
  id: 'sleep-agent',
  name: 'Sleep agent',
  description: 'Sleeps for `message` seconds (default 1), checking for cancellation at every step',
  async run(context: RunContext): Promise<string> {
    const requested = Number(context.message.trim() || '1');
    const seconds = Number.isFinite(requested) && requested >= 0 ? requested : 1;
    const deadline = Date.now() + seconds * 1000;
    await context.checkpoint();
    while (Date.now() < deadline) {
      await sleep(Math.min(SLEEP_STEP_MS, deadline - Date.now()));
      await context.checkpoint();
    }
    const content = `Slept ${seconds} s`;
    context.emit(content);
    return content;
  },
};

const failAgent: Component = {
  kind: 'agent',
  id: 'fail-agent',
  name: 'Fail agent',
  description: 'Always fails with an error message',
  async run(context: RunContext): Promise<string> {
    await context.checkpoint();
    throw new Error('fail-agent always fails');
  },
};

/** The demo components, registered when DEMO_COMPONENTS=true; tests and the README rely on these ids. */
export const DEMO_COMPONENTS: readonly Component[] = [
  echo('agent', 'echo-agent', 'Echo agent'),
  sleepAgent,
  failAgent,
  echo('team', 'echo-team', 'Echo team'),
  echo('workflow', 'echo-workflow', 'Echo workflow'),
];
