import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { createTestDatabase } from '../../../test/support/database';
import { call } from '../../../test/support/http';
import { ROOT_KEY } from '../../../test/support/principals';
import { RunningApi, RunningProcess, startApi, startWorker } from '../../../test/support/processes';

// Components answering what PostgreSQL cannot store as is: a NUL, half of a surrogate pair, usage no column
// holds, an answer that is not text.
const MODULE = join(mkdtempSync(join(tmpdir(), 'unstorable-')), 'agents.mjs');
writeFileSync(
  MODULE,
  `export default [
    { kind: 'agent', id: 'nul-agent', name: 'NUL', run: async () => 'before\\u0000after\\ud800' },
    { kind: 'agent', id: 'nul-fail-agent', name: 'NUL failure', run: async () => { throw new Error('bad\\u0000news\\udc00'); } },
    { kind: 'agent', id: 'odd-usage-agent', name: 'Odd usage', run: async (ctx) => {
      ctx.recordUsage({ model: 'm'.repeat(300), inputTokens: 12.7, outputTokens: -3 });
      return 'counted';
    } },
    { kind: 'agent', id: 'huge-usage-agent', name: 'Huge usage', run: async (ctx) => {
      ctx.recordUsage({ model: 'm', inputTokens: 7, outputTokens: 1e12 });
      return 'counted';
    } },
    { kind: 'agent', id: 'object-agent', name: 'Object', run: async () => ({ answer: 42 }) },
    { kind: 'agent', id: 'bigint-agent', name: 'BigInt', run: async () => ({ n: 10n }) },
  ];\n`,
);

/**
 * A component's content or error holding what PostgreSQL cannot store: its run is recorded with U+FFFD in
 * their place, in the api and in a worker, and the runs whose outcomes are written with it are unharmed.
 */
describe('a component answering a NUL or half a surrogate pair', () => {
  let api: RunningApi;
  let worker: RunningProcess;

  beforeAll(async () => {
    const env = { DATABASE_URL: await createTestDatabase(), OS_SECURITY_KEY: ROOT_KEY, DEMO_COMPONENTS: 'true', COMPONENTS_MODULE: MODULE };
    api = await startApi(env);
    worker = await startWorker(env);
  }, 120_000);
  afterAll(async () => {
    await worker?.stop();
    await api?.stop();
  });

  const post = (agent: string, background: boolean) =>
    call(api.url, 'POST', `/agents/${agent}/runs`, { token: ROOT_KEY, json: { message: 'hi', background } });

  it('is stored with U+FFFD in their place, in the api and in a worker, beside runs it shares a write with', async () => {
    expect((await post('nul-agent', false)).body).toMatchObject({ status: 'completed', content: 'before\ufffdafter\ufffd' });
    expect((await post('nul-fail-agent', false)).body).toMatchObject({ status: 'failed', error: 'bad\ufffdnews\ufffd' });

    // Queued together, so a worker writes their outcomes in few batches.
    const posted = await Promise.all(
      [
        'nul-agent',
        'nul-fail-agent',
        'odd-usage-agent',
        'huge-usage-agent',
        'object-agent',
        'bigint-agent',
        ...Array.from({ length: 20 }, () => 'echo-agent'),
      ].map(async (agent) => ({
        agent,
        runId: (await post(agent, true)).body.run_id as string,
      })),
    );
    const final = async ({ agent, runId }: { agent: string; runId: string }) => {
      const read = () => call(api.url, 'GET', `/agents/${agent}/runs/${runId}`, { token: ROOT_KEY });
      await expect.poll(async () => (await read()).body.status, { timeout: 30_000 }).toMatch(/^(completed|failed|cancelled)$/);
      return { agent, ...(await read()).body };
    };
    const runs = await Promise.all(posted.map(final));
    expect(runs.find((run) => run.agent === 'nul-agent')).toMatchObject({ status: 'completed', content: 'before\ufffdafter\ufffd' });
    expect(runs.find((run) => run.agent === 'nul-fail-agent')).toMatchObject({ status: 'failed', error: 'bad\ufffdnews\ufffd' });
    // Usage no column can hold as reported (a fraction, a negative count, a 300-character model) is stored as it can be.
    expect(runs.find((run) => run.agent === 'odd-usage-agent')).toMatchObject({
      status: 'completed',
      content: 'counted',
      model: 'm'.repeat(255),
      input_tokens: 13,
      output_tokens: null,
    });
    // A count past what the column holds is not a count to bill by: unknown, not the column's largest number.
    expect(runs.find((run) => run.agent === 'huge-usage-agent')).toMatchObject({
      status: 'completed',
      input_tokens: 7,
      output_tokens: null,
    });
    // An answer that is not text is stored as its JSON; one that has none fails its own run only.
    expect(runs.find((run) => run.agent === 'object-agent')).toMatchObject({ status: 'completed', content: '{"answer":42}' });
    expect(runs.find((run) => run.agent === 'bigint-agent')).toMatchObject({
      status: 'failed',
      error: expect.stringContaining("The component's answer cannot be stored as text"),
    });
    // The worker names the failing component in its log, as the api does for a run it executes.
    const failed = runs.find((run) => run.agent === 'nul-fail-agent')!;
    await expect.poll(() => worker.output(), { timeout: 5_000 }).toContain(`"run_id":"${failed.run_id}"`);
    expect(worker.output()).toMatch(/"component_id":"nul-fail-agent"[^\n]*"msg":"run failed: agent nul-fail-agent"/);
    expect(runs.filter((run) => run.agent === 'echo-agent').map((run) => [run.status, run.content])).toEqual(
      Array.from({ length: 20 }, () => ['completed', 'hi']),
    );
    expect(worker.output()).not.toMatch(/recording outcomes failed/);
  }, 60_000);
});
