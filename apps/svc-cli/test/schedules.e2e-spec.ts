import { randomUUID } from 'node:crypto';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { CliSandbox, cliSandbox, LiveService, runCli, startService } from '../../../test/support/cli';
import { runCommand } from '../../../test/support/cli-in-process';
import { call } from '../../../test/support/http';
import { mintAccount, ROOT_KEY, uniqueName } from '../../../test/support/principals';
import { waitFor } from '../../../test/support/processes';

interface Schedule {
  id: string;
  name: string;
  enabled: boolean;
  next_run_at: number | null;
  disabled_reason: string | null;
}

describe('svc schedules against a live api and worker', () => {
  let service: LiveService;
  let sandbox: CliSandbox;
  let asAdmin: Record<string, string>;

  // A worker runs beside these tests: a slot once a year (9:00 on January 1) never comes due while they run.
  const createSchedule = async (json: Record<string, unknown> = {}): Promise<Schedule> => {
    const response = await call<Schedule>(service.api.url, 'POST', '/schedules', {
      token: ROOT_KEY,
      json: {
        name: uniqueName('sched'),
        cron_expr: '0 9 1 1 *',
        timezone: 'Europe/Berlin',
        endpoint: '/agents/echo-agent/runs',
        payload: { message: 'hi' },
        ...json,
      },
    });
    expect(response.status, response.text).toBe(201);
    return response.body;
  };
  const read = async (id: string): Promise<Schedule> =>
    (await call<Schedule>(service.api.url, 'GET', `/schedules/${id}`, { token: ROOT_KEY })).body;

  beforeAll(async () => {
    service = await startService({ OS_SECURITY_KEY: ROOT_KEY, DEMO_COMPONENTS: 'true' });
    sandbox = cliSandbox();
    asAdmin = { SERVICE_URL: service.api.url, OS_SECURITY_KEY: ROOT_KEY };
  });
  afterAll(() => service?.stop());

  it('list --json prints {schedules}; the text form a table with id, name, cron, timezone, enabled, next run and target', async () => {
    const targeted = await createSchedule();
    const plain = await createSchedule({ endpoint: '/health', method: 'GET', payload: null, enabled: false });
    const run = await runCommand(['schedules', 'list', '--json'], sandbox, { env: asAdmin });
    expect(run.code, run.stderr).toBe(0);
    expect(Object.keys(run.json())).toEqual(['schedules']);
    const byId = new Map(run.json().schedules.map((schedule: Schedule) => [schedule.id, schedule]));
    expect(byId.get(targeted.id)).toEqual(await read(targeted.id));
    expect(byId.get(plain.id)).toMatchObject({ enabled: false, target_type: null });

    const text = await runCommand(['schedules', 'list'], sandbox, { env: { ...asAdmin, NO_COLOR: '1' } });
    expect(text.code).toBe(0);
    const lines = text.stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^ID\s+Name\s+Cron\s+Timezone\s+Enabled\s+Next run\s+Target$/);
    const row = lines.find((line) => line.startsWith(targeted.id))!;
    expect(row).toMatch(
      new RegExp(
        `^${targeted.id}\\s+${targeted.name}\\s+0 9 1 1 \\*\\s+Europe/Berlin\\s+yes\\s+\\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d UTC\\s+agent:echo-agent$`,
      ),
    );
    expect(row.indexOf('Europe/Berlin')).toBe(lines[0].indexOf('Timezone'));
    expect(lines.find((line) => line.startsWith(plain.id))).toMatch(/\s+no\s+-\s+-$/);
    expect(text.stdout).not.toContain('\u001b[');
  });

  it('get --json prints {schedule}; an unknown or malformed id exits 1', async () => {
    const schedule = await createSchedule();
    const run = await runCommand(['schedules', 'get', schedule.id, '--json'], sandbox, { env: asAdmin });
    expect(run.code).toBe(0);
    expect(run.json()).toEqual({ schedule: await read(schedule.id) });
    const text = await runCommand(['schedules', 'get', schedule.id], sandbox, { env: asAdmin });
    expect(text.stdout).toMatch(/^Call:\s+POST \/agents\/echo-agent\/runs$/m);
    expect(text.stdout).toMatch(/^Target:\s+agent:echo-agent$/m);
    const missing = await runCommand(['schedules', 'get', randomUUID(), '--json'], sandbox, { env: asAdmin });
    expect(missing.code).toBe(1);
    expect(missing.json()).toEqual({
      error: expect.stringMatching(/^No schedule '[0-9a-f-]{36}' found\.$/),
      hint: 'List them with: svc schedules list',
    });
    const unnamed = await runCommand(['schedules', 'get', 'nope', '--json'], sandbox, { env: asAdmin });
    expect(unnamed.code).toBe(1);
    expect(unnamed.json()).toEqual({
      error: "No schedule 'nope' found: no schedule has that id or name.",
      hint: 'List them with: svc schedules list',
    });
  });

  it('takes a name for the id where the credential sees one schedule of that name; several of one name are listed with their ids', async () => {
    const name = uniqueName('by-name');
    const mine = await createSchedule({ name });
    const byName = await runCommand(['schedules', 'get', name, '--json'], sandbox, { env: asAdmin });
    expect(byName.code, byName.stderr).toBe(0);
    expect(byName.json().schedule.id).toBe(mine.id);
    expect((await runCommand(['schedules', 'pause', name, '--json'], sandbox, { env: asAdmin })).code).toBe(0);
    expect((await read(mine.id)).enabled).toBe(false);

    // Names are unique per owner: another owner's of the same name makes the admin's lookup ambiguous, not the owner's.
    const owner = await mintAccount(service.api.url, ROOT_KEY, { scopes: ['schedules:read', 'schedules:write'], privileged: true });
    const theirs = await call<Schedule>(service.api.url, 'POST', '/schedules', {
      token: owner.token,
      json: { name, cron_expr: '0 9 1 1 *', endpoint: '/health', method: 'GET' },
    });
    expect(theirs.status, theirs.text).toBe(201);
    const ambiguous = await runCommand(['schedules', 'get', name, '--json'], sandbox, { env: asAdmin });
    expect(ambiguous.code).toBe(1);
    const mineOwner = (await call<{ user_id: string | null }>(service.api.url, 'GET', `/schedules/${mine.id}`, { token: ROOT_KEY })).body
      .user_id;
    expect(ambiguous.json()).toEqual({
      error: `2 schedules are named '${name}': ${mine.id} (owner ${mineOwner ?? 'none'}), ${theirs.body.id} (owner sa:${owner.name}).`,
      hint: 'Give the id of the one you mean.',
    });
    const asOwner = await runCommand(['schedules', 'get', name, '--json'], sandbox, {
      env: { SERVICE_URL: service.api.url, SVC_ADMIN_TOKEN: owner.token },
    });
    expect(asOwner.code, asOwner.stderr).toBe(0);
    expect(asOwner.json().schedule.id).toBe(theirs.body.id);
  });

  it('trigger prints the queued fire (202); runs shows the fire history with status, due, status code and attempts', async () => {
    const schedule = await createSchedule();
    const run = await runCommand(['schedules', 'trigger', schedule.id, '--json'], sandbox, { env: asAdmin });
    expect(run.code, run.stderr).toBe(0);
    expect(Object.keys(run.json())).toEqual(['run']);
    const fire = run.json().run;
    expect(fire).toMatchObject({ schedule_id: schedule.id, trigger: 'manual', status: 'queued', due_at: expect.any(Number), attempts: [] });

    await waitFor(
      async () =>
        (await call(service.api.url, 'GET', `/schedules/${schedule.id}/runs/${fire.id}`, { token: ROOT_KEY })).body.status === 'success',
      30_000,
      'the fire to succeed',
    );
    const runs = await runCommand(['schedules', 'runs', schedule.id, '--json'], sandbox, { env: asAdmin });
    expect(runs.code).toBe(0);
    expect(Object.keys(runs.json())).toEqual(['runs', 'meta']);
    expect(runs.json().meta).toMatchObject({ total_count: 1 });
    expect(runs.json().runs).toEqual([
      expect.objectContaining({
        id: fire.id,
        status: 'success',
        status_code: 200,
        attempts: [expect.objectContaining({ attempt: 1, status_code: 200 })],
      }),
    ]);

    const text = await runCommand(['schedules', 'runs', schedule.id], sandbox, { env: { ...asAdmin, NO_COLOR: '1' } });
    const lines = text.stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^ID\s+Trigger\s+Status\s+Due\s+Code\s+Attempts\s+Run\s+Error$/);
    expect(lines[1]).toMatch(
      new RegExp(`^${fire.id}\\s+manual\\s+success\\s+\\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d:\\d\\d UTC\\s+200\\s+1\\s+`),
    );

    const triggered = await runCommand(['schedules', 'trigger', schedule.id], sandbox, { env: asAdmin });
    expect(triggered.stdout).toContain(`Queued a fire of schedule ${schedule.id}`);
    expect(triggered.stdout).toMatch(/^Status:\s+queued$/m);
  });

  it('pause sends enabled: false (and disabled_reason only with --reason); trigger then exits 1; resume re-arms it', async () => {
    const schedule = await createSchedule();
    const paused = await runCommand(['schedules', 'pause', schedule.id, '--json'], sandbox, { env: asAdmin });
    expect(paused.code, paused.stderr).toBe(0);
    expect(paused.json()).toEqual({
      schedule: expect.objectContaining({ id: schedule.id, enabled: false, next_run_at: null, disabled_reason: null }),
    });

    const refused = await runCommand(['schedules', 'trigger', schedule.id, '--json'], sandbox, { env: asAdmin });
    expect(refused.code).toBe(1);
    expect(refused.json()).toEqual({
      error: expect.stringMatching(new RegExp(`^Could not trigger schedule '${schedule.id}': .+`)),
      hint: `Resume it first: svc schedules resume ${schedule.id}`,
    });

    const resumed = await runCommand(['schedules', 'resume', schedule.id], sandbox, { env: asAdmin });
    expect(resumed.code).toBe(0);
    expect(resumed.stdout).toMatch(
      new RegExp(`^Resumed schedule '${schedule.name}' \\(${schedule.id}\\); next run \\d{4}-.* UTC\\.$`, 'm'),
    );
    expect(await read(schedule.id)).toMatchObject({ enabled: true, next_run_at: expect.any(Number), disabled_reason: null });
  });

  it('pause --reason records disabled_reason; resume clears it', async () => {
    const schedule = await createSchedule();
    const run = await runCommand(['schedules', 'pause', schedule.id, '--reason', 'vendor outage', '--json'], sandbox, { env: asAdmin });
    expect(run.code, run.stderr).toBe(0);
    const body = run.json();
    expect(body).toEqual({ schedule: expect.objectContaining({ id: schedule.id, enabled: false, disabled_reason: 'vendor outage' }) });
    const text = await runCommand(['schedules', 'get', schedule.id], sandbox, { env: asAdmin });
    expect(text.stdout).toMatch(/^Disabled reason:\s+vendor outage$/m);
    const again = await runCommand(['schedules', 'pause', schedule.id, '--reason', 'still out'], sandbox, {
      env: { ...asAdmin, NO_COLOR: '1' },
    });
    expect(again.stdout).toBe(`Paused schedule '${schedule.name}' (${schedule.id}). Reason: still out\n`);
    expect(again.stderr).not.toContain('Warning');
    const resumed = await runCommand(['schedules', 'resume', schedule.id, '--json'], sandbox, { env: asAdmin });
    expect(resumed.json().schedule).toMatchObject({ enabled: true, disabled_reason: null });
  });

  it("a token without the schedules scopes gets the api's 403 as exit 1 with its detail", async () => {
    const schedule = await createSchedule();
    const runner = await mintAccount(service.api.url, ROOT_KEY, { scopes: ['agents:run'] });
    const list = await runCommand(['schedules', 'list', '--json'], sandbox, {
      env: { SERVICE_URL: service.api.url, SVC_ADMIN_TOKEN: runner.token },
    });
    expect(list.code).toBe(1);
    expect(list.json()).toEqual({
      error: 'The service refused the credential (403: Insufficient permissions. Required scope(s): schedules:read).',
      hint: expect.stringContaining('schedules:read'),
    });
    // A name is looked up in the list the credential may read: none without schedules:read.
    const byName = await runCommand(['schedules', 'get', schedule.name, '--json'], sandbox, {
      env: { SERVICE_URL: service.api.url, SVC_ADMIN_TOKEN: runner.token },
    });
    expect(byName.code).toBe(1);
    expect(byName.json().error).toBe(
      'The service refused the credential (403: Insufficient permissions. Required scope(s): schedules:read).',
    );
    const reader = await mintAccount(service.api.url, ROOT_KEY, { scopes: ['schedules:read'] });
    const pause = await runCommand(['schedules', 'pause', schedule.id], sandbox, {
      env: { SERVICE_URL: service.api.url, SVC_ADMIN_TOKEN: reader.token },
    });
    expect(pause.code).toBe(1);
    expect(pause.stderr).toContain(
      'Error: The service refused the credential (403: Insufficient permissions. Required scope(s): schedules:write).',
    );
    expect((await read(schedule.id)).enabled).toBe(true);
  });

  it('usage errors exit 2 on stderr with no JSON', async () => {
    for (const args of [
      ['schedules'],
      ['schedules', 'get', '--json'],
      ['schedules', 'runs', randomUUID(), '--limit', '0', '--json'],
      ['schedules', 'pause', randomUUID(), '--reason'],
      ['schedules', 'resume', 'a', 'b'],
    ]) {
      const run = await runCli(args, sandbox, { env: asAdmin });
      expect(run.code, args.join(' ')).toBe(2);
      expect(run.stdout).toBe('');
      expect(run.stderr).not.toBe('');
    }
  });
});
