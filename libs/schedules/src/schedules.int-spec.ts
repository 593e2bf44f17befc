import { Controller, Post } from '@nestjs/common';
import { Pool } from 'pg';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';

import { AuthModule, RequireScope } from '@app/auth';
import { ValidationFailedException } from '@app/errors';

import { bootModule, ModuleOnDatabase, principals } from '../../../test/support/nest-module';
import { CreateScheduleDto, UpdateScheduleDto } from './schedule.dto';
import { ScheduleErrorCode as Code } from './schedule.exception';
import { ScheduleDispatchRepository } from './schedule-dispatch.repository';
import { ScheduleFireStore } from './schedule-fire-store';
import { ScheduleMetricsService } from './schedule-metrics.service';
import { COUNTED_SKIP_REASONS } from './schedule-run.entity';
import { SchedulesModule } from './schedules.module';
import { SchedulesService } from './schedules.service';

/** A route a schedule may call, declared as the api declares its run route: its scope is what a schedule's owner needs. */
@Controller('agents')
class AgentRunRoute {
  @Post(':agent_id/runs')
  @RequireScope('agents:run', { componentParam: 'agent_id' })
  run(): void {}
}

const AGENT_RUN = '/agents/echo-agent/runs';
const alice = principals.jwt('alice', ['schedules:write', 'agents:run']);

function createRequest(fields: Partial<CreateScheduleDto> & { name: string }): CreateScheduleDto {
  return Object.assign(new CreateScheduleDto(), { cron_expr: '0 9 * * *', endpoint: AGENT_RUN, ...fields });
}

function patch(fields: Partial<UpdateScheduleDto>): UpdateScheduleDto {
  return Object.assign(new UpdateScheduleDto(), fields);
}

/** Wall-clock hour and minute of an epoch-seconds instant in a time zone. */
function localTime(epochSeconds: number, timeZone: string): string {
  return new Intl.DateTimeFormat('en-GB', { timeZone, hour: '2-digit', minute: '2-digit', hourCycle: 'h23' }).format(epochSeconds * 1000);
}

// The rules of SchedulesService (update, re-arming, ownership, trigger) and of the worker's due-slot
// queueing (missed ticks), in process on a cloned database.
describe('SchedulesService', () => {
  let app: ModuleOnDatabase;
  let schedules: SchedulesService;
  let counter = 0;
  const freshName = () => `Nightly (v${++counter})`;

  beforeAll(async () => {
    app = await bootModule({
      imports: [AuthModule, SchedulesModule],
      controllers: [AgentRunRoute],
      providers: [ScheduleDispatchRepository],
    });
    schedules = app.get(SchedulesService);
  });

  afterAll(async () => {
    await app?.close();
  });

  async function storedNextRun(id: string): Promise<Date | null> {
    const [row] = await app.sql<{ next_run_at: Date | null }>('SELECT next_run_at FROM schedules WHERE id = $1', [id]);
    return row.next_run_at;
  }

  describe('arming', () => {
    it("arms next_run_at at the next slot on the schedule's own clock", async () => {
      const now = Date.now() / 1000;
      const created = await schedules.create(alice, createRequest({ name: freshName(), timezone: 'Europe/Berlin' }));

      expect(localTime(created.next_run_at!, 'Europe/Berlin')).toBe('09:00');
      expect(created.next_run_at!).toBeGreaterThan(now);
      expect(created.next_run_at! - now).toBeLessThanOrEqual(25 * 3600);
      expect(created).toMatchObject({ target_type: 'agent', target_id: 'echo-agent', overlap_policy: 'skip', catchup_policy: 'once' });
    });

    it('a PATCH that changes neither cron, zone nor enabled leaves next_run_at as a worker left it', async () => {
      const created = await schedules.create(alice, createRequest({ name: freshName() }));
      const advanced = new Date('2031-01-01T00:00:00Z');
      await app.sql('UPDATE schedules SET next_run_at = $2 WHERE id = $1', [created.id, advanced]);

      const updated = await schedules.update(alice, created.id, patch({ description: 'renamed', timeout_seconds: 30 }));

      expect(await storedNextRun(created.id)).toEqual(advanced);
      expect(updated).toMatchObject({ description: 'renamed', timeout_seconds: 30 });
    });

    it('a new cron_expr or timezone re-arms next_run_at', async () => {
      const created = await schedules.create(alice, createRequest({ name: freshName() }));

      const hourly = await schedules.update(alice, created.id, patch({ cron_expr: '30 * * * *' }));
      expect(localTime(hourly.next_run_at!, 'UTC').endsWith(':30')).toBe(true);

      const zoned = await schedules.update(alice, created.id, patch({ cron_expr: '0 9 * * *', timezone: 'Asia/Tokyo' }));
      expect(localTime(zoned.next_run_at!, 'Asia/Tokyo')).toBe('09:00');
      expect((await storedNextRun(created.id))!.getTime()).toBe(zoned.next_run_at! * 1000);
    });

    it('pausing clears next_run_at and keeps the reason; resuming re-arms it and clears the reason', async () => {
      const created = await schedules.create(alice, createRequest({ name: freshName() }));

      const paused = await schedules.update(alice, created.id, patch({ enabled: false, disabled_reason: 'maintenance' }));
      expect(paused).toMatchObject({ enabled: false, next_run_at: null, disabled_reason: 'maintenance' });
      expect(await storedNextRun(created.id)).toBeNull();

      const resumed = await schedules.update(alice, created.id, patch({ enabled: true }));
      expect(resumed).toMatchObject({ enabled: true, disabled_reason: null });
      expect(resumed.next_run_at).toBe(created.next_run_at);
    });

    it('refuses disabled_reason without enabled: false (422 on body.disabled_reason)', async () => {
      const created = await schedules.create(alice, createRequest({ name: freshName() }));
      const refusal = schedules.update(alice, created.id, patch({ disabled_reason: 'why' }));
      await expect(refusal).rejects.toBeInstanceOf(ValidationFailedException);
      await expect(refusal).rejects.toMatchObject({ issues: [{ loc: ['body', 'disabled_reason'], type: 'value_error' }] });
    });
  });

  describe('names and calls', () => {
    it('a name in use is a 409; names with spaces and parentheses are fine', async () => {
      const name = freshName();
      await schedules.create(alice, createRequest({ name }));
      await expect(schedules.create(alice, createRequest({ name }))).rejects.toMatchObject({ code: Code.NameTaken });
      const other = await schedules.create(alice, createRequest({ name: freshName() }));
      await expect(schedules.update(alice, other.id, patch({ name }))).rejects.toMatchObject({ code: Code.NameTaken });
    });

    it('refuses a call to the schedule routes however it is spelled (422), and one the caller may not make (403)', async () => {
      for (const endpoint of ['/schedules', '//schedules/x/trigger', '/x/../%73chedules']) {
        await expect(schedules.create(alice, createRequest({ name: freshName(), endpoint }))).rejects.toMatchObject({
          issues: [{ loc: ['body', 'endpoint'], type: 'schedule_route' }],
        });
      }
      const noRun = principals.jwt('bob', ['schedules:write']);
      await expect(schedules.create(noRun, createRequest({ name: freshName() }))).rejects.toMatchObject({
        code: Code.Forbidden,
        detail: expect.stringContaining('Required scope(s): agents:run or agents:echo-agent:run'),
      });
      // A grant for the one agent it calls is enough.
      const narrow = principals.jwt('bob', ['schedules:write', 'agents:echo-agent:run']);
      await expect(schedules.create(narrow, createRequest({ name: freshName() }))).resolves.toMatchObject({ endpoint: AGENT_RUN });
    });
  });

  describe('ownership', () => {
    it("another principal's schedule needs platform:admin to change; the admin who rewrites its call becomes its owner", async () => {
      const created = await schedules.create(alice, createRequest({ name: freshName() }));
      const mallory = principals.jwt('mallory', ['schedules:write', 'agents:run']);
      const admin = principals.jwt('root-operator', ['platform:admin']);
      const ownerOf = async () =>
        (
          await app.sql<{ owner_id: string; owner_scopes: string[] }>('SELECT owner_id, owner_scopes FROM schedules WHERE id = $1', [
            created.id,
          ])
        )[0];
      const aliceOwns = { owner_id: 'alice', owner_scopes: [...alice.scopes] };

      await expect(schedules.update(mallory, created.id, patch({ description: 'mine' }))).rejects.toMatchObject({ code: Code.Forbidden });
      await expect(schedules.trigger(mallory, created.id)).rejects.toMatchObject({ code: Code.Forbidden });
      await expect(schedules.remove(mallory, created.id)).rejects.toMatchObject({ code: Code.Forbidden });

      // Pausing, resuming or renaming keeps the owner: the admin lends the schedule nothing.
      for (const change of [{ enabled: false }, { enabled: true }, { description: 'reviewed', cron_expr: '0 3 * * *' }]) {
        await schedules.update(admin, created.id, patch(change));
        expect(await ownerOf()).toEqual(aliceOwns);
      }
      await schedules.update(admin, created.id, patch({ payload: { message: 'taken over' } }));
      expect(await ownerOf()).toEqual({ owner_id: 'root-operator', owner_scopes: ['platform:admin'] });
      await expect(schedules.update(alice, created.id, patch({ description: 'back' }))).rejects.toMatchObject({ code: Code.Forbidden });
    });

    it('an owner who lost the scope of the call may still pause it, but not resume it', async () => {
      const created = await schedules.create(alice, createRequest({ name: freshName() }));
      const demoted = principals.jwt('alice', ['schedules:write']);

      await expect(schedules.update(demoted, created.id, patch({ enabled: false }))).resolves.toMatchObject({ enabled: false });
      await expect(schedules.update(demoted, created.id, patch({ enabled: true }))).rejects.toMatchObject({ code: Code.Forbidden });
    });

    it('a schedule fire may not write schedules, whatever its owner may do', async () => {
      const created = await schedules.create(alice, createRequest({ name: freshName() }));
      const fire = { ...principals.securityKey(), scheduleId: created.id };
      await expect(schedules.update(fire, created.id, patch({ description: 'loop' }))).rejects.toMatchObject({ code: Code.Forbidden });
      await expect(schedules.create(fire, createRequest({ name: freshName() }))).rejects.toMatchObject({ code: Code.Forbidden });
    });
  });

  describe('trigger', () => {
    it('queues a manual fire without touching next_run_at; the overlap policy skips the next while it waits', async () => {
      const created = await schedules.create(alice, createRequest({ name: freshName() }));

      const first = await schedules.trigger(alice, created.id);
      const second = await schedules.trigger(alice, created.id);

      expect(first).toMatchObject({ trigger: 'manual', status: 'queued', reason: null });
      expect(second).toMatchObject({ trigger: 'manual', status: 'skipped', reason: 'overlap' });
      expect((await storedNextRun(created.id))!.getTime()).toBe(created.next_run_at! * 1000);
    });

    it('with overlap_policy allow, every trigger is queued', async () => {
      const created = await schedules.create(alice, createRequest({ name: freshName(), overlap_policy: 'allow' }));
      await schedules.trigger(alice, created.id);
      await expect(schedules.trigger(alice, created.id)).resolves.toMatchObject({ status: 'queued' });
    });

    it('refuses a paused schedule (409 naming the reason)', async () => {
      const created = await schedules.create(alice, createRequest({ name: freshName() }));
      await schedules.update(alice, created.id, patch({ enabled: false, disabled_reason: 'quiet week' }));
      await expect(schedules.trigger(alice, created.id)).rejects.toMatchObject({
        code: Code.Disabled,
        detail: expect.stringContaining('(quiet week)'),
      });
    });
  });

  describe('claiming fires (the worker engine)', () => {
    it('claims racing on several workers start one fire at a time of a serial schedule, and every fire of an allow one', async () => {
      const serial = await Promise.all(
        ['skip', 'buffer_one', 'skip', 'buffer_one'].map((policy) =>
          schedules.create(alice, createRequest({ name: freshName(), overlap_policy: policy as CreateScheduleDto['overlap_policy'] })),
        ),
      );
      const allow = await schedules.create(alice, createRequest({ name: freshName(), overlap_policy: 'allow' }));
      // Each schedule's four fires are next to each other in the claim's order, so one claim meets several of them.
      for (const [index, { id }] of [...serial, allow].entries()) {
        await app.sql(
          `INSERT INTO schedule_runs (id, schedule_id, trigger, status, due_at)
           SELECT gen_random_uuid(), $1, 'manual', 'queued', now() - make_interval(mins => 10 * $2 + g) FROM generate_series(1, 4) g`,
          [id, 5 - index],
        );
      }
      const pool = new Pool({ connectionString: app.databaseUrl, max: 6 });
      try {
        const workers = Array.from({ length: 6 }, (_, index) => new ScheduleFireStore(pool, `claim-race-${index}`));
        const claimed: string[] = [];
        for (let round = 0; round < 4; round += 1) {
          const batches = await Promise.all(workers.map((worker) => worker.claim(3)));
          claimed.push(...batches.flat().map((fire) => fire.id));
        }
        expect(new Set(claimed).size).toBe(claimed.length);
        const running = await app.sql<{ schedule_id: string; n: number }>(
          `SELECT schedule_id, count(*)::int AS n FROM schedule_runs WHERE status = 'running' AND schedule_id = ANY ($1) GROUP BY schedule_id`,
          [[...serial, allow].map((schedule) => schedule.id)],
        );
        const byId = new Map(running.map((row) => [row.schedule_id, row.n]));
        expect(serial.map((schedule) => byId.get(schedule.id))).toEqual([1, 1, 1, 1]);
        expect(byId.get(allow.id)).toBe(4);
      } finally {
        await pool.end();
      }
    });

    it('a fire picked because its schedule allowed overlap does not start once a PATCH made the schedule serial', async () => {
      const schedule = await schedules.create(alice, createRequest({ name: freshName(), overlap_policy: 'allow' }));
      await app.sql(
        `INSERT INTO schedule_runs (id, schedule_id, trigger, status, due_at)
         SELECT gen_random_uuid(), $1, 'manual', 'queued', now() - make_interval(mins => g) FROM generate_series(1, 3) g`,
        [schedule.id],
      );
      const pool = new Pool({ connectionString: app.databaseUrl, max: 1 });
      // The PATCH lands between the claim's two statements: right after the one that picked the fires answers.
      let patched = false;
      const connect = pool.connect.bind(pool);
      pool.connect = (async () => {
        const client = await connect();
        const query = client.query.bind(client) as (config: unknown) => Promise<{ rows: object[] }>;
        client.query = (async (config: unknown) => {
          const result = await query(config);
          if (!patched && result.rows[0] && 'allowed' in result.rows[0]) {
            patched = true;
            await schedules.update(alice, schedule.id, patch({ overlap_policy: 'skip' }));
          }
          return result;
        }) as typeof client.query;
        return client;
      }) as typeof pool.connect;
      try {
        const store = new ScheduleFireStore(pool, 'policy-change');
        expect(await store.claim(10)).toEqual([]);
        expect(patched).toBe(true);
        // Serial from now on: the next claim starts its oldest fire alone.
        expect((await store.claim(10)).map((fire) => fire.scheduleId)).toEqual([schedule.id]);
      } finally {
        await pool.end();
      }
    });
  });

  describe('missed ticks (the worker queueing due slots)', () => {
    // A yearly schedule due three years ago: four slots (Jan 1 of each year up to this one) are due now.
    const thisYear = new Date().getUTCFullYear();
    const slots = [3, 2, 1, 0].map((ago) => `${thisYear - ago}-01-01T00:00:00.000Z`);

    async function dueSince(
      catchup: Partial<CreateScheduleDto>,
    ): Promise<{ id: string; queued: string[]; missed: string[]; nextRunAt: Date | null }> {
      const created = await schedules.create(alice, createRequest({ name: freshName(), cron_expr: '0 0 1 1 *', ...catchup }));
      await app.sql('UPDATE schedules SET next_run_at = $2 WHERE id = $1', [created.id, slots[0]]);
      // Other schedules may be due too; each is queued once.
      await app.get(ScheduleDispatchRepository).queueDue(500);
      const fires = await app.sql<{ status: string; reason: string | null; due_at: Date }>(
        'SELECT status, reason, due_at FROM schedule_runs WHERE schedule_id = $1 ORDER BY due_at',
        [created.id],
      );
      return {
        id: created.id,
        queued: fires.filter((fire) => fire.status === 'queued').map((fire) => fire.due_at.toISOString()),
        missed: fires.filter((fire) => fire.reason === 'missed').map((fire) => fire.due_at.toISOString()),
        nextRunAt: await storedNextRun(created.id),
      };
    }

    it('catchup_policy once fires the latest missed slot once and records the others as missed', async () => {
      const result = await dueSince({ catchup_policy: 'once' });
      expect(result.queued).toEqual(slots.slice(3));
      expect(result.missed).toEqual(slots.slice(0, 3));
      expect(result.nextRunAt!.toISOString()).toBe(`${thisYear + 1}-01-01T00:00:00.000Z`);
    });

    it('catchup_policy all fires the latest catchup_limit slots, oldest first', async () => {
      const result = await dueSince({ catchup_policy: 'all', catchup_limit: 2 });
      expect(result.queued).toEqual(slots.slice(2));
      expect(result.missed).toEqual(slots.slice(0, 2));
    });

    it('catchup_policy skip fires none of them', async () => {
      const result = await dueSince({ catchup_policy: 'skip' });
      expect(result.queued).toEqual([]);
      expect(result.missed).toEqual(slots);
    });

    it('a worker whose clock runs ahead of the database skips no slot: the next one is the slot after the database’s now', async () => {
      const created = await schedules.create(alice, createRequest({ name: freshName(), cron_expr: '* * * * *' }));
      await app.sql(`UPDATE schedules SET next_run_at = date_trunc('minute', now()) WHERE id = $1`, [created.id]);
      const realNow = Date.now();
      const ahead = vi.spyOn(Date, 'now').mockReturnValue(realNow + 90_000);
      try {
        await app.get(ScheduleDispatchRepository).queueDue(500);
      } finally {
        ahead.mockRestore();
      }
      const [fire] = await app.sql<{ due_at: Date }>('SELECT due_at FROM schedule_runs WHERE schedule_id = $1', [created.id]);
      expect((await storedNextRun(created.id))!.getTime()).toBe(fire.due_at.getTime() + 60_000);
    });

    it('a schedule this version cannot read (a time zone gone, a cron form refused) is disabled, saying why, and the others fire', async () => {
      const readable = await schedules.create(alice, createRequest({ name: freshName(), cron_expr: '0 0 1 1 *' }));
      const zoneGone = await schedules.create(alice, createRequest({ name: freshName(), cron_expr: '0 0 1 1 *' }));
      const cronRefused = await schedules.create(alice, createRequest({ name: freshName(), cron_expr: '0 0 1 1 *' }));
      // As an older version stored them; the oldest due first, so a failing tick would stop every schedule.
      await app.sql(`UPDATE schedules SET timezone = 'Mars/Olympus_Mons', next_run_at = now() - interval '2 minutes' WHERE id = $1`, [
        zoneGone.id,
      ]);
      await app.sql(`UPDATE schedules SET cron_expr = 'every full moon', next_run_at = now() - interval '2 minutes' WHERE id = $1`, [
        cronRefused.id,
      ]);
      await app.sql(`UPDATE schedules SET next_run_at = now() - interval '1 second' WHERE id = $1`, [readable.id]);

      await app.get(ScheduleDispatchRepository).queueDue(500);
      for (const id of [zoneGone.id, cronRefused.id]) {
        const [row] = await app.sql<{ enabled: boolean; next_run_at: Date | null; disabled_reason: string }>(
          'SELECT enabled, next_run_at, disabled_reason FROM schedules WHERE id = $1',
          [id],
        );
        expect(row).toMatchObject({ enabled: false, next_run_at: null, disabled_reason: expect.stringMatching(/^unreadable_schedule: /) });
      }
      const fires = await app.sql<{ status: string }>('SELECT status FROM schedule_runs WHERE schedule_id = $1', [readable.id]);
      expect(fires).toEqual([{ status: 'queued' }]);
    });

    it('a slot is queued once: a second pass finds nothing due', async () => {
      const result = await dueSince({ catchup_policy: 'once' });
      await app.get(ScheduleDispatchRepository).queueDue(500);
      const [{ count }] = await app.sql<{ count: number }>('SELECT count(*)::int AS count FROM schedule_runs WHERE schedule_id = $1', [
        result.id,
      ]);
      expect(count).toBe(4);
    });
  });

  describe('skipped fires on /metrics', () => {
    async function skippedTotals(): Promise<Record<string, number>> {
      const metrics = app.get(ScheduleMetricsService);
      await metrics.refresh();
      const text = await metrics.registry.metrics();
      return Object.fromEntries(
        [...text.matchAll(/^schedule_fires_skipped_total\{reason="(\w+)"\} (\d+)$/gm)].map((m) => [m[1], Number(m[2])]),
      );
    }

    it('counts each fire once as it becomes skipped, by reason, and keeps the count when the history goes', async () => {
      const before = await skippedTotals();
      const schedule = await schedules.create(alice, createRequest({ name: freshName() }));
      await app.sql(
        `INSERT INTO schedule_runs (id, schedule_id, trigger, status, reason, due_at)
         VALUES (gen_random_uuid(), $1, 'cron', 'skipped', 'overlap', now()), (gen_random_uuid(), $1, 'cron', 'skipped', 'missed', now()),
                (gen_random_uuid(), $1, 'cron', 'skipped', 'missed', now()), (gen_random_uuid(), $1, 'cron', 'queued', NULL, now())`,
        [schedule.id],
      );
      // A queued fire whose schedule was disabled before it started ends skipped with no reason; writing it again counts nothing.
      await app.sql(`UPDATE schedule_runs SET status = 'skipped' WHERE schedule_id = $1 AND status = 'queued'`, [schedule.id]);
      await app.sql(`UPDATE schedule_runs SET error = 'again' WHERE schedule_id = $1`, [schedule.id]);
      const after = await skippedTotals();
      expect({
        overlap: after.overlap - before.overlap,
        missed: after.missed - before.missed,
        disabled: after.disabled - before.disabled,
        buffer_full: after.buffer_full - before.buffer_full,
      }).toEqual({ overlap: 1, missed: 2, disabled: 1, buffer_full: 0 });
      await schedules.remove(alice, schedule.id);
      expect(await skippedTotals()).toEqual(after);
      // The workers fold the kept deltas into a row per reason; the totals stay.
      const pool = new Pool({ connectionString: app.databaseUrl, max: 1 });
      try {
        await new ScheduleFireStore(pool, 'fold').maintain();
      } finally {
        await pool.end();
      }
      expect(await skippedTotals()).toEqual(after);
      const [{ rows }] = await app.sql<{ rows: number }>('SELECT count(*)::int AS rows FROM schedule_fire_skip_counts');
      expect(rows).toBeLessThanOrEqual(COUNTED_SKIP_REASONS.length);
    });

    it('two transactions skipping fires for the same reasons in opposite orders both commit (no shared counter row to wait on)', async () => {
      const schedule = await schedules.create(alice, createRequest({ name: freshName() }));
      const before = await skippedTotals();
      const pool = new Pool({ connectionString: app.databaseUrl, max: 2 });
      const [first, second] = [await pool.connect(), await pool.connect()];
      const skip = (client: typeof first, reason: string) =>
        client.query(
          `INSERT INTO schedule_runs (id, schedule_id, trigger, status, reason, due_at) VALUES (gen_random_uuid(), $1, 'cron', 'skipped', $2, now())`,
          [schedule.id, reason],
        );
      try {
        await Promise.all([first, second].map((client) => client.query(`BEGIN; SET LOCAL lock_timeout = '3s'`)));
        await skip(first, 'overlap');
        await skip(second, 'missed');
        // Counter rows updated in place would make each wait for the other here: a deadlock, one of them rolled back.
        await Promise.all([skip(first, 'missed'), skip(second, 'overlap')]);
        await Promise.all([first.query('COMMIT'), second.query('COMMIT')]);
      } finally {
        first.release();
        second.release();
        await pool.end();
      }
      const after = await skippedTotals();
      expect([after.overlap - before.overlap, after.missed - before.missed]).toEqual([2, 2]);
    });
  });
});
