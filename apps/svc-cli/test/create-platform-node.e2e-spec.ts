import { join } from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { cliSandbox, runCli } from '../../../test/support/cli';
import { createTestDatabase } from '../../../test/support/database';
import { call } from '../../../test/support/http';
import { ROOT_KEY } from '../../../test/support/principals';
import { RunningApi, RunningProcess, startApi, startWorker, waitFor } from '../../../test/support/processes';

/**
 * The platform-node template end to end: `svc create` a project, then the real built api and worker
 * with COMPONENTS_MODULE naming its components.mjs, as its README tells an operator to run them.
 * Needs the platform's COMPONENTS_MODULE loader.
 */
describe('a platform-node project on the real api and worker', () => {
  let api: RunningApi;
  let worker: RunningProcess;
  let project: string;

  beforeAll(async () => {
    const sandbox = cliSandbox();
    const created = await runCli(['create', 'my-agents', '-t', 'platform-node', '--json'], sandbox);
    expect(created.code, created.stdout + created.stderr).toBe(0);
    project = created.json<{ path: string }>().path;
    expect(project).toBe(join(sandbox.cwd, 'my-agents'));

    const databaseUrl = await createTestDatabase();
    const env = { DATABASE_URL: databaseUrl, COMPONENTS_MODULE: join(project, 'components.mjs'), QUEUE_POLL_INTERVAL_MS: '200' };
    api = await startApi({ ...env, OS_SECURITY_KEY: ROOT_KEY });
    // As in every deployment, the worker runs without the OS security key.
    worker = await startWorker({ ...env, PUBLIC_URL: api.url });
  });
  afterAll(async () => {
    await Promise.all([api?.stop(), worker?.stop()]);
  });

  it("lists the project's hello-agent", async () => {
    const agent = await call(api.url, 'GET', '/agents/hello-agent', { token: ROOT_KEY });
    expect(agent.status, agent.text).toBe(200);
    expect(agent.body).toMatchObject({ id: 'hello-agent', type: 'agent', name: 'Hello agent' });
  });

  it("runs it synchronously (200 with its content), then in the background on the worker with the session's history", async () => {
    // Form-encoded, as the README's curl sends it.
    const sync = await call(api.url, 'POST', '/agents/hello-agent/runs', {
      token: ROOT_KEY,
      raw: { body: new URLSearchParams({ message: 'Ada' }).toString(), contentType: 'application/x-www-form-urlencoded' },
    });
    expect(sync.status, sync.text).toBe(200);
    expect(sync.body).toMatchObject({ status: 'completed', content: 'Hello, Ada! This is the start of the session.' });

    const queued = await call(api.url, 'POST', '/agents/hello-agent/runs', {
      token: ROOT_KEY,
      json: { message: 'Grace', background: true, session_id: sync.body.session_id },
    });
    expect(queued.status, queued.text).toBe(202);
    expect(queued.body).toEqual({ run_id: expect.any(String), session_id: sync.body.session_id, status: 'queued' });

    let run: { status: string; content: string | null } = { status: 'queued', content: null };
    await waitFor(
      async () => {
        run = (await call(api.url, 'GET', `/agents/hello-agent/runs/${queued.body.run_id}`, { token: ROOT_KEY })).body;
        return !['queued', 'running'].includes(run.status);
      },
      30_000,
      'the worker to finish the background run',
    );
    // The worker loaded the same module: the run finished there, with the first run (its message and answer) as one earlier turn.
    expect(run).toMatchObject({ status: 'completed', background: true, content: 'Hello, Grace! This session has 1 earlier turn.' });
    expect(worker.output()).not.toMatch(/COMPONENTS_MODULE .*: /);
  });
});
