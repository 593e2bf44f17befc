import { plainToInstance } from 'class-transformer';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { ValidationFailedException } from '@app/errors';

import { bootModule, ModuleOnDatabase } from '../../../test/support/nest-module';
import { CancellationIntents } from './cancellation-intents';
import { enqueueJobs } from './enqueue';
import { BulkJobsDto, RequeueQuery } from './job.dto';
import { JobStatus } from './job-status';
import { QueueErrorCode } from './queue.exception';
import { QueueModule } from './queue.module';
import { QueueAdminService } from './queue-admin.service';

/** The state a job is put in, as a worker, the sweeper or an earlier operator would have left it. */
interface Placed {
  status: JobStatus;
  /** Seconds since it ended (a failure within the lock grace may still be running somewhere). */
  endedAgo?: number;
  error?: string;
}

// The operator's rules over queue jobs (QueueAdminService on QueueJobRepository), in process on a cloned database.
describe('QueueAdminService', () => {
  let app: ModuleOnDatabase;
  let admin: QueueAdminService;
  let component = 0;

  beforeAll(async () => {
    app = await bootModule({ imports: [QueueModule] }, { QUEUE_LOCK_GRACE_SECONDS: '60' });
    admin = app.get(QueueAdminService);
  });

  afterAll(async () => {
    await app?.close();
  });

  /** Jobs of one fresh component, one per placement, created in order. */
  async function place(...placements: Placed[]): Promise<{ componentId: string; ids: string[] }> {
    const componentId = `queue-int-${++component}`;
    const ids: string[] = [];
    for (const placed of placements) {
      const [id] = await enqueueJobs(app.dataSource, [{ componentType: 'agent', componentId, sessionId: 's', userId: null, payload: {} }]);
      const ended = placed.status === 'failed' || placed.status === 'cancelled' || placed.status === 'completed';
      await app.sql(
        `UPDATE queue_jobs SET status = $2, error = $3, attempt = CASE WHEN $4 THEN 1 ELSE 0 END,
                completed_at = CASE WHEN $4 THEN now() - make_interval(secs => $5) END WHERE id = $1`,
        [id, placed.status, placed.error ?? null, ended, placed.endedAgo ?? 3600],
      );
      ids.push(id);
    }
    return { componentId, ids };
  }

  async function statuses(ids: string[]): Promise<{ id: string; status: string; max_attempts: number }[]> {
    return app.sql('SELECT id, status, max_attempts FROM queue_jobs WHERE id = ANY ($1::uuid[]) ORDER BY created_at, id', [ids]);
  }

  const bulk = (body: object) => plainToInstance(BulkJobsDto, body);
  const options = (fields: Partial<RequeueQuery> = {}) => Object.assign(new RequeueQuery(), fields);

  describe('requeue of one job', () => {
    it('gives a failed job one more attempt and keeps its last error for the record', async () => {
      const { ids } = await place({ status: 'failed', error: 'boom' });
      await expect(admin.requeue(ids[0], options())).resolves.toMatchObject({ status: 'queued', max_attempts: 2, error: 'boom' });
    });

    it('refuses a job in any state but failed or cancelled (400 naming its state), and an unknown id (404)', async () => {
      const { ids } = await place({ status: 'queued' }, { status: 'completed' }, { status: 'running' });
      for (const [index, state] of ['queued', 'completed', 'running'].entries()) {
        await expect(admin.requeue(ids[index], options())).rejects.toMatchObject({
          code: QueueErrorCode.NotRequeueable,
          detail: `Job ${ids[index]} is ${state}; only failed and cancelled jobs can be requeued`,
        });
      }
      await expect(admin.requeue('00000000-0000-4000-8000-000000000000', options())).rejects.toMatchObject({
        code: QueueErrorCode.JobNotFound,
      });
    });

    it('a failure within the lock grace needs force (409); force requeues it', async () => {
      const { ids } = await place({ status: 'failed', endedAgo: 5 });
      await expect(admin.requeue(ids[0], options())).rejects.toMatchObject({ code: QueueErrorCode.MayStillBeRunning });
      await expect(admin.requeue(ids[0], options({ force: true }))).resolves.toMatchObject({ status: 'queued' });
    });

    it('clear_cancellation drops a live cancellation intent; without it the intent stays', async () => {
      const intents = app.get(CancellationIntents);
      const { ids } = await place({ status: 'cancelled' }, { status: 'cancelled' });
      for (const id of ids) {
        await app.dataSource.transaction((manager) => intents.record(manager, id, 'operator'));
      }

      await admin.requeue(ids[0], options());
      await admin.requeue(ids[1], options({ clear_cancellation: true }));

      expect(await intents.isLive(ids[0])).toBe(true);
      expect(await intents.isLive(ids[1])).toBe(false);
    });
  });

  describe('bulk requeue and cancel', () => {
    it('refuses an empty filter (422 on body.filter)', async () => {
      const refusal = admin.bulkRequeue(bulk({ filter: {} }));
      await expect(refusal).rejects.toBeInstanceOf(ValidationFailedException);
      await expect(refusal).rejects.toMatchObject({ issues: [{ loc: ['body', 'filter'], type: 'empty_filter' }] });
    });

    it('a dry run (the default) counts what it would change and changes nothing', async () => {
      const { componentId, ids } = await place({ status: 'failed' }, { status: 'failed' }, { status: 'queued' });
      const result = await admin.bulkRequeue(bulk({ filter: { component_id: componentId } }));

      expect(result).toEqual({ dry_run: true, matched: 3, changed: 2, skipped: [{ id: ids[2], reason: 'status:queued' }] });
      expect((await statuses(ids)).map((job) => job.status)).toEqual(['failed', 'failed', 'queued']);
    });

    it('requeue applies the single-job rules to each job and says why it skipped the others', async () => {
      const { componentId, ids } = await place(
        { status: 'failed' },
        { status: 'cancelled' },
        { status: 'failed', endedAgo: 5 },
        { status: 'running' },
      );
      const result = await admin.bulkRequeue(bulk({ filter: { component_id: componentId }, dry_run: false }));

      expect(result).toEqual({
        dry_run: false,
        matched: 4,
        changed: 2,
        skipped: [
          { id: ids[2], reason: 'lock_grace' },
          { id: ids[3], reason: 'status:running' },
        ],
      });
      expect(await statuses(ids)).toEqual([
        { id: ids[0], status: 'queued', max_attempts: 2 },
        { id: ids[1], status: 'queued', max_attempts: 2 },
        { id: ids[2], status: 'failed', max_attempts: 1 },
        { id: ids[3], status: 'running', max_attempts: 1 },
      ]);
    });

    it('the filter narrows by status and error text, and limit takes the oldest first', async () => {
      const { componentId, ids } = await place(
        { status: 'failed', error: 'Provider answered 429' },
        { status: 'failed', error: 'provider ANSWERED 429 again' },
        { status: 'failed', error: 'timeout' },
        { status: 'cancelled', error: 'Provider answered 429' },
      );
      const result = await admin.bulkRequeue(
        bulk({ filter: { component_id: componentId, status: ['failed'], error_contains: 'answered 429' }, limit: 1, dry_run: false }),
      );

      expect(result).toMatchObject({ matched: 1, changed: 1 });
      expect((await statuses(ids)).map((job) => job.status)).toEqual(['queued', 'failed', 'failed', 'cancelled']);
    });

    it('cancel changes queued and paused jobs only; running and final jobs are never touched', async () => {
      const { componentId, ids } = await place({ status: 'queued' }, { status: 'paused' }, { status: 'running' }, { status: 'completed' });
      const result = await admin.bulkCancel(bulk({ filter: { component_id: componentId }, dry_run: false }));

      expect(result).toEqual({
        dry_run: false,
        matched: 4,
        changed: 2,
        skipped: [
          { id: ids[2], reason: 'status:running' },
          { id: ids[3], reason: 'status:completed' },
        ],
      });
      expect((await statuses(ids)).map((job) => job.status)).toEqual(['cancelled', 'cancelled', 'running', 'completed']);
    });
  });
});
