import { randomUUID } from 'node:crypto';

import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';

import { CliSandbox, cliSandbox, runCli, SVC_BIN } from '../../../test/support/cli';
import { runCommand } from '../../../test/support/cli-in-process';
import { createTestDatabase, query } from '../../../test/support/database';
import { call } from '../../../test/support/http';
import { mintAccount, ROOT_KEY } from '../../../test/support/principals';
import { RunningApi, RunningProcess, startApi, startWorker, waitFor } from '../../../test/support/processes';
import { TmuxSession } from '../../../test/support/tmux';
import { JOB_KEYS } from '../../../test/support/wire-shapes';

interface Job {
  id: string;
  status: string;
  component_id: string;
  max_attempts: number;
}

/**
 * svc jobs against the real api, with jobs made the real way by a real worker: fail-agent runs fail,
 * echo-agent runs complete, a sleep-agent run keeps running; then the worker is stopped so requeued jobs
 * stay queued where the tests can see them. The lock grace is an hour, so every failed job is "recent"
 * and needs --force: the tests see both sides of that rule without racing a clock.
 */
describe('svc jobs against a live api (jobs made by a real worker)', () => {
  let api: RunningApi;
  let worker: RunningProcess | undefined;
  let sandbox: CliSandbox;
  let asAdmin: Record<string, string>;
  let databaseUrl: string;
  const ids: Record<'failed' | 'completed' | 'running' | 'cancelled' | 'queued', string[]> = {
    failed: [],
    completed: [],
    running: [],
    cancelled: [],
    queued: [],
  };

  const background = async (agent: string, message: string) =>
    (await call(api.url, 'POST', `/agents/${agent}/runs`, { token: ROOT_KEY, json: { message, background: true } })).body.run_id as string;
  const job = async (id: string): Promise<Job> => (await call(api.url, 'GET', `/queue/jobs/${id}`, { token: ROOT_KEY })).body;

  beforeAll(async () => {
    databaseUrl = await createTestDatabase();
    const env = { DATABASE_URL: databaseUrl, OS_SECURITY_KEY: ROOT_KEY, DEMO_COMPONENTS: 'true', QUEUE_LOCK_GRACE_SECONDS: '3600' };
    api = await startApi(env);
    worker = await startWorker({ ...env, PUBLIC_URL: api.url });
    for (let index = 0; index < 8; index += 1) ids.failed.push(await background('fail-agent', `f${index}`));
    ids.completed.push(await background('echo-agent', 'done'));
    ids.running.push(await background('sleep-agent', '120'));
    await waitFor(
      async () => {
        const states = await Promise.all([...ids.failed, ...ids.completed, ...ids.running].map(async (id) => (await job(id)).status));
        return states.join() === [...ids.failed.map(() => 'failed'), 'completed', 'running'].join();
      },
      45_000,
      'failed, completed and running jobs',
    );
    await worker.stop('SIGKILL');
    worker = undefined;
    ids.queued.push(await background('echo-agent', 'waits'));
    const cancelled = await background('echo-agent', 'cancelled');
    await call(api.url, 'POST', `/agents/echo-agent/runs/${cancelled}/cancel`, { token: ROOT_KEY });
    ids.cancelled.push(cancelled);
    sandbox = cliSandbox();
    asAdmin = { SERVICE_URL: api.url, OS_SECURITY_KEY: ROOT_KEY };
  });
  afterAll(async () => {
    await worker?.stop();
    await api?.stop();
  });

  describe('list, get and stats', () => {
    it('list --json prints {jobs, meta}, newest first, filtered by repeated --status', async () => {
      const all = await runCommand(['jobs', 'list', '--limit', '100', '--json'], sandbox, { env: asAdmin });
      expect(all.code, all.stderr).toBe(0);
      const body = all.json();
      expect(Object.keys(body)).toEqual(['jobs', 'meta']);
      expect(body.meta).toEqual({ limit: 100, count: 12, total_count: 12, scanned: 12, truncated: false });
      for (const listed of body.jobs) {
        expect(Object.keys(listed).sort()).toEqual(JOB_KEYS);
      }
      const created = body.jobs.map((listed: { created_at: number }) => listed.created_at);
      expect(created).toEqual([...created].sort((a, b) => b - a));

      const failed = (
        await runCommand(['jobs', 'list', '--status', 'failed', '--limit', '100', '--json'], sandbox, { env: asAdmin })
      ).json();
      expect(failed.jobs.map((listed: Job) => listed.id).sort()).toEqual([...ids.failed].sort());
      const two = (
        await runCommand(['jobs', 'list', '--status', 'cancelled', '--status', 'running', '--json'], sandbox, { env: asAdmin })
      ).json();
      expect(two.jobs.map((listed: Job) => listed.id).sort()).toEqual([...ids.cancelled, ...ids.running].sort());
    });

    it('list --limit cuts the list and says so in meta', async () => {
      const run = await runCommand(['jobs', 'list', '--limit', '3', '--json'], sandbox, { env: asAdmin });
      expect(run.json().jobs).toHaveLength(3);
      expect(run.json().meta).toEqual({ limit: 3, count: 3, total_count: 12, scanned: 3, truncated: true });
    });

    it('list --component filters client-side over the newest jobs, up to --limit', async () => {
      const run = await runCommand(['jobs', 'list', '--component', 'echo-agent', '--json'], sandbox, { env: asAdmin });
      expect(run.code).toBe(0);
      const { jobs, meta } = run.json();
      expect(jobs.map((listed: Job) => listed.id).sort()).toEqual([...ids.completed, ...ids.queued, ...ids.cancelled].sort());
      expect(meta).toEqual({ limit: 20, count: 3, total_count: 12, scanned: 12, truncated: false });
      const limited = (
        await runCommand(['jobs', 'list', '--component', 'fail-agent', '--status', 'failed', '--limit', '2', '--json'], sandbox, {
          env: asAdmin,
        })
      ).json();
      expect(limited.jobs).toHaveLength(2);
      expect(limited.jobs.every((listed: Job) => listed.component_id === 'fail-agent')).toBe(true);
      expect(limited.meta).toMatchObject({ limit: 2, count: 2, truncated: true });
    });

    it('list prints an aligned table without colour off a terminal, and notes the component filter on stderr', async () => {
      const run = await runCommand(['jobs', 'list', '--component', 'sleep-agent'], sandbox, { env: { ...asAdmin, NO_COLOR: '1' } });
      expect(run.code).toBe(0);
      const lines = run.stdout.trimEnd().split('\n');
      expect(lines[0]).toMatch(/^ID\s+Status\s+Component\s+Attempt\s+Created\s+Error$/);
      expect(lines).toHaveLength(2);
      expect(lines[1]).toMatch(
        new RegExp(`^${ids.running[0]}\\s+running\\s+agent:sleep-agent\\s+1/1\\s+\\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d UTC\\s+-$`),
      );
      expect(lines[1].indexOf('running')).toBe(lines[0].indexOf('Status'));
      expect(run.stdout).not.toContain('\u001b[');
      expect(run.stderr).toContain('Filtered by component here: 1 match among the newest 12 jobs read.');
    });

    it('get --json prints {job}; the text form shows its fields; an unknown id exits 1', async () => {
      const run = await runCommand(['jobs', 'get', ids.failed[0], '--json'], sandbox, { env: asAdmin });
      expect(run.code).toBe(0);
      expect(Object.keys(run.json())).toEqual(['job']);
      expect(run.json().job).toMatchObject({
        id: ids.failed[0],
        status: 'failed',
        component_id: 'fail-agent',
        error: expect.stringContaining('fail-agent always fails'),
      });
      expect(Object.keys(run.json().job).sort()).toEqual(JOB_KEYS);

      const text = await runCommand(['jobs', 'get', ids.failed[0]], sandbox, { env: asAdmin });
      expect(text.stdout).toMatch(/^ID:\s+[0-9a-f-]{36}$/m);
      expect(text.stdout).toMatch(/^Status:\s+failed$/m);
      expect(text.stdout).toMatch(/^Component:\s+agent:fail-agent$/m);
      expect(text.stdout).toMatch(/^Error:\s+.*fail-agent always fails/m);

      for (const id of [randomUUID(), 'not-a-job']) {
        const missing = await runCommand(['jobs', 'get', id, '--json'], sandbox, { env: asAdmin });
        expect(missing.code).toBe(1);
        expect(missing.json()).toEqual({ error: `No queue job '${id}' found.`, hint: 'List them with: svc jobs list' });
      }
    });

    it('stats --json prints the api body; the text form a table and the oldest queued age', async () => {
      const run = await runCommand(['jobs', 'stats', '--json'], sandbox, { env: asAdmin });
      expect(run.code).toBe(0);
      const direct = (await call(api.url, 'GET', '/queue/stats', { token: ROOT_KEY })).body;
      expect(Object.keys(run.json())).toEqual(Object.keys(direct));
      expect(run.json().counts).toEqual(direct.counts);
      expect(run.json().counts).toMatchObject({ failed: 8, completed: 1, running: 1, cancelled: 1, queued: 1 });
      expect(run.json().oldest_queued_age_seconds).toEqual(expect.any(Number));

      const text = await runCommand(['jobs', 'stats'], sandbox, { env: { ...asAdmin, NO_COLOR: '1' } });
      expect(text.stdout).toMatch(/^Status\s+Jobs$/m);
      expect(text.stdout).toMatch(/^running\s+1$/m);
      expect(text.stdout).toMatch(/^Oldest queued job: \d+[smhd] old$/m);

      // The queued job handed back for a few seconds (as a run of a component no worker has is): queued, but none due.
      await query(databaseUrl, `UPDATE queue_jobs SET available_at = now() + interval '1 hour' WHERE status = 'queued'`);
      try {
        const notDue = await runCommand(['jobs', 'stats'], sandbox, { env: { ...asAdmin, NO_COLOR: '1' } });
        expect(notDue.stdout).toMatch(
          /^Oldest queued job: none due now \(1 queued: retries in their backoff, or runs waiting for a worker/m,
        );
      } finally {
        await query(databaseUrl, `UPDATE queue_jobs SET available_at = now() WHERE status = 'queued'`);
      }

      // A due job waiting minutes while nothing runs: the likeliest cause, no worker, is named.
      const running = await query<{ id: string }>(
        databaseUrl,
        `UPDATE queue_jobs SET status = 'paused' WHERE status = 'running' RETURNING id`,
      );
      await query(databaseUrl, `UPDATE queue_jobs SET available_at = now() - interval '5 minutes' WHERE status = 'queued'`);
      try {
        const idle = await runCommand(['jobs', 'stats'], sandbox, { env: { ...asAdmin, NO_COLOR: '1' } });
        expect(idle.stdout).toMatch(
          /^Oldest queued job: 5m old, and no job is running: is a worker up\? \(npm start runs one; a deployment runs npm run start:worker\)$/m,
        );
      } finally {
        await query(databaseUrl, `UPDATE queue_jobs SET available_at = now() WHERE status = 'queued'`);
        await query(databaseUrl, `UPDATE queue_jobs SET status = 'running' WHERE id = ANY ($1::uuid[])`, [running.map((row) => row.id)]);
      }
    });
  });

  describe('usage errors and principals', () => {
    it('bad flags and flag combinations exit 2 on stderr with no JSON, before anything changes', async () => {
      for (const args of [
        ['jobs'],
        ['jobs', 'list', '--status', 'lost', '--json'],
        ['jobs', 'list', '--limit', '0', '--json'],
        ['jobs', 'list', '--limit', 'ten'],
        ['jobs', 'get', '--json'],
        ['jobs', 'requeue', '--status', 'failed', '--since', '5x', '--dry-run', '--json'],
        ['jobs', 'requeue', '--status', 'failed', '--since', '-1h', '--dry-run'],
        ['jobs', 'requeue', '--status', 'failed', '--since', '1w', '--dry-run'],
        ['jobs', 'requeue', '--status', 'completed', '--dry-run'],
        ['jobs', 'requeue', '--json'],
        ['jobs', 'requeue', ids.failed[0], '--status', 'failed', '--json'],
        ['jobs', 'requeue', ids.failed[0], '--dry-run'],
        ['jobs', 'requeue', '--component', 'fail-agent', '--dry-run'],
        // A bulk requeue off a terminal changes jobs only with --yes.
        ['jobs', 'requeue', '--status', 'failed', '--force'],
        ['jobs', 'requeue', '--status', 'failed', '--force', '--json'],
        ['jobs', 'cancel', '--json'],
        ['jobs', 'cancel', '--status', 'failed', '--dry-run'],
        ['jobs', 'cancel', ids.queued[0], '--status', 'queued'],
        ['jobs', 'cancel', '--status', 'queued', '--json'],
        ['jobs', 'cancel', ids.queued[0], '--force'],
      ]) {
        const run = await runCli(args, sandbox, { env: asAdmin });
        expect(run.code, `${args.join(' ')}\n${run.stderr}`).toBe(2);
        expect(run.stdout, args.join(' ')).toBe('');
        expect(run.stderr).toMatch(/error|Usage/);
      }
      const noYes = await runCli(['jobs', 'requeue', '--status', 'failed', '--json'], sandbox, { env: asAdmin });
      expect(noYes.stderr).toContain('--yes');
      expect(noYes.stderr).toContain('--dry-run');
      const since = await runCli(['jobs', 'requeue', '--status', 'failed', '--since', '5x'], sandbox, { env: asAdmin });
      expect(since.stderr).toContain("option '--since <duration>' argument '5x' is invalid");
      expect((await job(ids.failed.at(-1)!)).status).toBe('failed');
      expect((await job(ids.queued[0])).status).toBe('queued');
    });

    it("a token without platform:admin gets the api's 403 as exit 1 with its detail", async () => {
      const operator = await mintAccount(api.url, ROOT_KEY, { scopes: ['agents:run', 'schedules:write'], privileged: true });
      // The security key set too: the token, which svc sends first, is refused, and the hint says which one went.
      const env = { SERVICE_URL: api.url, SVC_ADMIN_TOKEN: operator.token, OS_SECURITY_KEY: ROOT_KEY };
      for (const args of [
        ['jobs', 'list', '--json'],
        ['jobs', 'stats', '--json'],
        ['jobs', 'get', ids.failed[0], '--json'],
        ['jobs', 'requeue', ids.failed[0], ids.failed[1], '--json'],
        ['jobs', 'requeue', '--status', 'failed', '--yes', '--json'],
        ['jobs', 'cancel', ids.queued[0], '--json'],
        ['jobs', 'cancel', '--status', 'queued', '--yes', '--json'],
      ]) {
        const run = await runCommand(args, sandbox, { env });
        expect(run.code, args.join(' ')).toBe(1);
        expect(run.json()).toEqual({
          error: 'The service refused the credential (403: Insufficient permissions. Required scope(s): platform:admin).',
          hint: 'The queue routes need platform:admin: use SVC_ADMIN_TOKEN with a token that has it, or OS_SECURITY_KEY. (svc sent SVC_ADMIN_TOKEN, which goes before OS_SECURITY_KEY.)',
        });
      }
      const text = await runCommand(['jobs', 'list'], sandbox, { env });
      expect(text.code).toBe(1);
      expect(text.stdout).toBe('');
      expect(text.stderr).toContain(
        'Error: The service refused the credential (403: Insufficient permissions. Required scope(s): platform:admin).',
      );
      expect((await job(ids.failed[0])).status).toBe('failed');
    });
  });

  describe('requeue by id', () => {
    it('a failed job inside the lock grace needs --force; with it the job is queued with one more attempt', async () => {
      const id = ids.failed[0];
      const refused = await runCommand(['jobs', 'requeue', id], sandbox, { env: asAdmin });
      expect(refused.code).toBe(1);
      expect(refused.stderr).toContain(`Could not requeue ${id}: Job ${id} failed within the last 3600s`);
      expect(refused.stderr).toContain('pass --force');
      expect(refused.stderr).not.toContain('force=true');
      expect((await job(id)).status).toBe('failed');
      // In JSON the refusal carries the CLI's flag too, beside the api's own words.
      const refusedJson = await runCommand(['jobs', 'requeue', id, '--json'], sandbox, { env: asAdmin });
      expect(refusedJson.json().failed).toEqual([
        { id, error: expect.stringContaining('force=true'), hint: expect.stringContaining('pass --force') },
      ]);

      const before = await job(id);
      const run = await runCommand(['jobs', 'requeue', id, '--force', '--json'], sandbox, { env: asAdmin });
      expect(run.code).toBe(0);
      expect(Object.keys(run.json())).toEqual(['requeued', 'failed']);
      expect(run.json().failed).toEqual([]);
      expect(run.json().requeued).toHaveLength(1);
      expect(run.json().requeued[0]).toMatchObject({ id, status: 'queued', max_attempts: before.max_attempts + 1 });
      expect(await job(id)).toMatchObject({ status: 'queued', max_attempts: before.max_attempts + 1 });
      // Queued again, it keeps the error of its last attempt: shown as that, not as the error of a job that failed.
      const shown = await runCommand(['jobs', 'get', id], sandbox, { env: { ...asAdmin, NO_COLOR: '1' } });
      expect(shown.stdout).toMatch(/^Last error:\s+.*fail-agent always fails/m);
      expect(shown.stdout).not.toMatch(/^Error:/m);
    });

    it('some requeued and some refused: exit 3 with each failure named; all refused: exit 1', async () => {
      const unknown = randomUUID();
      const run = await runCommand(['jobs', 'requeue', ids.failed[1], ids.completed[0], unknown, '--force', '--json'], sandbox, {
        env: asAdmin,
      });
      expect(run.code).toBe(3);
      const body = run.json();
      expect(body.requeued.map((requeued: Job) => requeued.id)).toEqual([ids.failed[1]]);
      expect(body.failed).toEqual([
        { id: ids.completed[0], error: `Job ${ids.completed[0]} is completed; only failed and cancelled jobs can be requeued` },
        { id: unknown, error: `No queue job '${unknown}' found.` },
      ]);

      const none = await runCommand(['jobs', 'requeue', ids.running[0], '--json'], sandbox, { env: asAdmin });
      expect(none.code).toBe(1);
      expect(none.json()).toEqual({
        requeued: [],
        failed: [{ id: ids.running[0], error: `Job ${ids.running[0]} is running; only failed and cancelled jobs can be requeued` }],
      });
      expect((await job(ids.running[0])).status).toBe('running');
    });

    it('--clear-cancellation requeues a cancelled job (text form); without it the CLI says the cancel comes along', async () => {
      const id = ids.cancelled[0];
      const env = { ...asAdmin, NO_COLOR: '1' };
      const dry = await runCommand(['jobs', 'requeue', '--status', 'cancelled', '--dry-run'], sandbox, { env });
      expect(dry.code, dry.stderr).toBe(0);
      expect(dry.stdout).toContain('Would requeue 1 job of 1 matched (status cancelled');
      expect(dry.stderr).toContain(
        'the new attempt is cancelled again at its first checkpoint. Requeue with --clear-cancellation to run it.',
      );
      const clearing = await runCommand(['jobs', 'requeue', '--status', 'cancelled', '--clear-cancellation', '--dry-run'], sandbox, {
        env,
      });
      expect(clearing.stderr).not.toContain('--clear-cancellation');
      const run = await runCommand(['jobs', 'requeue', id, '--clear-cancellation'], sandbox, { env });
      expect(run.code, run.stderr).toBe(0);
      expect(run.stderr).not.toContain('--clear-cancellation');
      // By id, the same note (the job is read first: the requeue's answer no longer says it was cancelled).
      const another = await background('echo-agent', 'cancelled too');
      await call(api.url, 'POST', `/agents/echo-agent/runs/${another}/cancel`, { token: ROOT_KEY });
      const byId = await runCommand(['jobs', 'requeue', another], sandbox, { env });
      expect(byId.code, byId.stderr).toBe(0);
      expect(byId.stderr).toContain('Requeue with --clear-cancellation to run it.');
      expect(run.stdout).toMatch(new RegExp(`^Requeued ${id} \\(agent:echo-agent; 0 of 2 attempts used\\)\\.$`, 'm'));
      expect((await job(id)).status).toBe('queued');
    });
  });

  describe('bulk requeue (POST /queue/jobs/requeue)', () => {
    // ids.failed[0] and [1] were requeued above; these are the ones still failed.
    const stillFailed = () => ids.failed.slice(2);

    it('--dry-run --json prints the dry run and changes nothing; without --force the lock grace skips every job', async () => {
      const run = await runCommand(['jobs', 'requeue', '--status', 'failed', '--component', 'fail-agent', '--dry-run', '--json'], sandbox, {
        env: asAdmin,
      });
      expect(run.code, run.stderr).toBe(0);
      const body = run.json();
      expect(body).toMatchObject({ dry_run: true, matched: 6, changed: 0 });
      expect(body.skipped.map((skip: { id: string }) => skip.id).sort()).toEqual([...stillFailed()].sort());
      expect(new Set(body.skipped.map((skip: { reason: string }) => skip.reason))).toEqual(new Set(['lock_grace']));

      const forced = await runCommand(['jobs', 'requeue', '--status', 'failed', '--since', '1h', '--force', '--dry-run'], sandbox, {
        env: { ...asAdmin, NO_COLOR: '1' },
      });
      expect(forced.code).toBe(0);
      expect(forced.stdout).toContain(`Would requeue 6 jobs of 6 matched (status failed, created since `);
      expect(forced.stdout).toContain('dry run, nothing changed.');
      for (const id of stillFailed()) {
        expect((await job(id)).status).toBe('failed');
      }
    });

    it('--error-contains selects by the text of the error, in any case', async () => {
      const dry = (text: string) =>
        runCommand(['jobs', 'requeue', '--status', 'failed', '--error-contains', text, '--force', '--dry-run', '--json'], sandbox, {
          env: asAdmin,
        });
      expect((await dry('ALWAYS FAILS')).json()).toMatchObject({ dry_run: true, matched: 6, changed: 6 });
      expect((await dry('a dependency that never failed')).json()).toEqual({ dry_run: true, matched: 0, changed: 0, skipped: [] });
      const text = await runCommand(
        ['jobs', 'requeue', '--status', 'failed', '--error-contains', 'always fails', '--force', '--dry-run'],
        sandbox,
        {
          env: { ...asAdmin, NO_COLOR: '1' },
        },
      );
      expect(text.stdout).toContain(
        'Would requeue 6 jobs of 6 matched (status failed, error containing "always fails"); dry run, nothing changed.',
      );
      // Not with ids: a filter flag and named jobs do not mix.
      expect((await runCli(['jobs', 'requeue', ids.failed[2], '--error-contains', 'x'], sandbox, { env: asAdmin })).code).toBe(2);
    });

    it('--since leaves out older jobs', async () => {
      await new Promise((resolve) => setTimeout(resolve, 2_100));
      const run = await runCommand(['jobs', 'requeue', '--status', 'failed', '--since', '2', '--force', '--dry-run', '--json'], sandbox, {
        env: asAdmin,
      });
      expect(run.json()).toEqual({ dry_run: true, matched: 0, changed: 0, skipped: [] });
    });

    it('--limit selects the oldest jobs first', async () => {
      const run = await runCommand(['jobs', 'requeue', '--status', 'failed', '--limit', '2', '--force', '--dry-run', '--json'], sandbox, {
        env: asAdmin,
      });
      expect(run.json()).toMatchObject({ dry_run: true, matched: 2, changed: 2 });
    });

    it('--yes --json requeues what the filter selects, each with one more attempt', async () => {
      const target = stillFailed().slice(-2);
      const before = await Promise.all(target.map(job));
      // Two jobs are left for the prompt test below: narrow by component and limit instead of ids.
      const run = await runCommand(
        ['jobs', 'requeue', '--status', 'failed', '--component', 'fail-agent', '--limit', '2', '--force', '--yes', '--json'],
        sandbox,
        { env: asAdmin },
      );
      expect(run.code, run.stderr).toBe(0);
      expect(run.json()).toEqual({ dry_run: false, matched: 2, changed: 2, skipped: [] });
      const oldest = stillFailed().slice(0, 2);
      for (const id of oldest) {
        expect((await job(id)).status).toBe('queued');
      }
      // The newest were left alone.
      for (const [index, id] of target.entries()) {
        expect(await job(id)).toMatchObject({ status: 'failed', max_attempts: before[index].max_attempts });
      }
    });
  });

  describe('bulk requeue at a terminal (tmux)', () => {
    let session: TmuxSession | null = null;
    afterEach(() => {
      session?.kill();
      session = null;
    });

    it('list colours statuses on a terminal with the columns still aligned, and never with NO_COLOR', async () => {
      const terminalSandbox = cliSandbox();
      const env = {
        PATH: process.env.PATH ?? '',
        HOME: terminalSandbox.home,
        TERM: 'xterm-256color',
        SERVICE_URL: api.url,
        OS_SECURITY_KEY: ROOT_KEY,
      };
      const argv = [process.execPath, SVC_BIN, 'jobs', 'list', '--status', 'failed', '--status', 'running'];
      session = TmuxSession.start(argv, env, terminalSandbox.cwd);
      expect(await session.exitCode()).toBe(0);
      // failed in red, running in cyan.
      const ansi = (code: number, text: string) => `\u001b[${code}m${text}`;
      expect(session.screen(true)).toContain(ansi(31, 'failed'));
      expect(session.screen(true)).toContain(ansi(36, 'running'));
      const lines = session.screen().split('\n');
      const header = lines.find((line) => line.startsWith('ID'))!;
      const running = lines.find((line) => line.startsWith(ids.running[0]))!;
      expect(running.indexOf('running')).toBe(header.indexOf('Status'));
      expect(running.indexOf('agent:sleep-agent')).toBe(header.indexOf('Component'));
      session.kill();

      // On 80 columns too, where the error and component columns are cut: the id stays whole, as `svc jobs get` takes it;
      // a status stays whole, and a time keeps its month, day and minute rather than its year.
      session = TmuxSession.start(argv, { ...env, NO_COLOR: '1' }, terminalSandbox.cwd, 80);
      expect(await session.exitCode()).toBe(0);
      expect(session.screen(true)).toContain(ids.running[0]);
      expect(session.screen()).toContain('…');
      expect(session.screen(true)).not.toContain('\u001b[');
      const narrow = session.screen().split('\n');
      const narrowRow = narrow.find((line) => line.startsWith(ids.running[0]))!;
      expect(narrowRow).toMatch(/ running .* \d\d-\d\d \d\d:\d\d( |$)/);
      expect(session.screen()).not.toMatch(/\d{4}-\d\d…|compl…|runni…|faile…/);
    });

    it('shows the count first; No changes nothing, Yes requeues', async () => {
      const remaining = ids.failed.slice(4);
      expect(remaining).toHaveLength(4);
      const terminalSandbox = cliSandbox();
      const env = {
        PATH: process.env.PATH ?? '',
        HOME: terminalSandbox.home,
        TERM: 'xterm-256color',
        NO_COLOR: '1',
        SERVICE_URL: api.url,
        OS_SECURITY_KEY: ROOT_KEY,
      };
      const argv = [process.execPath, SVC_BIN, 'jobs', 'requeue', '--status', 'failed', '--component', 'fail-agent', '--force'];

      session = TmuxSession.start(argv, env, terminalSandbox.cwd);
      const screen = await session.waitForText('Requeue 4 jobs?');
      expect(screen).toContain('4 jobs would be requeued of 4 matched (status failed, component fail-agent).');
      expect(screen.indexOf('4 jobs would be requeued')).toBeLessThan(screen.indexOf('Requeue 4 jobs?'));
      session.type('', 'Enter');
      expect(await session.exitCode()).toBe(0);
      expect(session.screen()).toContain('Aborted; no changes made.');
      for (const id of remaining) {
        expect((await job(id)).status).toBe('failed');
      }
      session.kill();

      session = TmuxSession.start(argv, env, terminalSandbox.cwd);
      await session.waitForText('Requeue 4 jobs?');
      session.type('y', 'Enter');
      expect(await session.exitCode()).toBe(0);
      expect(session.screen()).toContain('Requeued 4 jobs of 4 matched (status failed, component fail-agent).');
      for (const id of remaining) {
        expect((await job(id)).status).toBe('queued');
      }
    });
  });

  describe('cancel (POST /queue/jobs/cancel)', () => {
    const runStatus = async (id: string) =>
      (await call(api.url, 'GET', `/agents/echo-agent/runs/${id}`, { token: ROOT_KEY })).body.status as string;

    it('by id: a queued job is cancelled and its run with it; a running job and an unknown id are named: exit 3; all refused: exit 1', async () => {
      const queued = await background('echo-agent', 'to cancel');
      const unknown = randomUUID();
      // Ids as a person may type them: in capitals, twice, or not an id at all.
      const shouting = ids.running[0].toUpperCase();
      const args = ['jobs', 'cancel', queued, shouting, unknown, queued.toUpperCase(), 'not-an-id', '--json'];
      const run = await runCommand(args, sandbox, { env: asAdmin });
      expect(run.code, run.stderr).toBe(3);
      expect(run.json()).toEqual({
        cancelled: [queued],
        failed: [
          { id: shouting, error: `Job ${shouting} is running; only queued and paused jobs can be cancelled` },
          { id: unknown, error: `No queue job '${unknown}' found.` },
          { id: 'not-an-id', error: "No queue job 'not-an-id' found." },
        ],
      });
      expect((await job(queued)).status).toBe('cancelled');
      expect(await runStatus(queued)).toBe('cancelled');
      expect((await job(ids.running[0])).status).toBe('running');

      const none = await runCommand(['jobs', 'cancel', ids.running[0]], sandbox, { env: { ...asAdmin, NO_COLOR: '1' } });
      expect(none.code).toBe(1);
      expect(none.stderr).toContain(`Could not cancel ${ids.running[0]}: Job ${ids.running[0]} is running`);
      expect(none.stderr).toContain('A running job stops when its run is cancelled');

      const another = await background('echo-agent', 'to cancel too');
      const text = await runCommand(['jobs', 'cancel', another], sandbox, { env: { ...asAdmin, NO_COLOR: '1' } });
      expect(text.code, text.stderr).toBe(0);
      expect(text.stdout).toBe(`Cancelled ${another} (agent:echo-agent).\n`);
    });

    it('by filter: --dry-run counts and changes nothing, --yes cancels the queued jobs the filter selects and no others', async () => {
      const mine = [await background('echo-agent', 'bulk 1'), await background('echo-agent', 'bulk 2')];
      const queuedEcho = (await call(api.url, 'GET', '/queue/jobs?status=queued&limit=1000', { token: ROOT_KEY })).body.data.filter(
        (queuedJob: Job) => queuedJob.component_id === 'echo-agent',
      );
      expect(queuedEcho.map((queuedJob: Job) => queuedJob.id)).toEqual(expect.arrayContaining(mine));
      const otherQueued = (await call(api.url, 'GET', '/queue/jobs?status=queued&limit=1000', { token: ROOT_KEY })).body.data.filter(
        (queuedJob: Job) => queuedJob.component_id !== 'echo-agent',
      );
      expect(otherQueued.length).toBeGreaterThan(0);

      const args = ['jobs', 'cancel', '--status', 'queued', '--component', 'echo-agent'];
      const dry = await runCommand([...args, '--dry-run', '--json'], sandbox, { env: asAdmin });
      expect(dry.code, dry.stderr).toBe(0);
      expect(dry.json()).toEqual({ dry_run: true, matched: queuedEcho.length, changed: queuedEcho.length, skipped: [] });
      expect((await job(mine[0])).status).toBe('queued');

      const done = await runCommand([...args, '--yes'], sandbox, { env: { ...asAdmin, NO_COLOR: '1' } });
      expect(done.code, done.stderr).toBe(0);
      expect(done.stdout).toContain(
        `Cancelled ${queuedEcho.length} jobs of ${queuedEcho.length} matched (status queued, component echo-agent).`,
      );
      for (const queuedJob of queuedEcho) {
        expect((await job(queuedJob.id)).status).toBe('cancelled');
      }
      for (const queuedJob of otherQueued) {
        expect((await job(queuedJob.id)).status).toBe('queued');
      }
    });
  });
});
