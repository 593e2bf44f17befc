import { Injectable } from '@nestjs/common';
import { EntityManager, In } from 'typeorm';

import { CancellationIntents } from './cancellation-intents';
import { QueueJobEntity } from './job.entity';
import { JobStatus } from './job-status';

/** States a cancel turns into `cancelled` at once; a running job stops at its next checkpoint. */
const WAITING: JobStatus[] = ['queued', 'paused'];

/**
 * The producer side's changes to a job, inside the caller's transaction so the job and the row it
 * works on (the run) change together. Jobs are created with their run in one statement (enqueueWith).
 */
@Injectable()
export class JobProducer {
  constructor(private readonly intents: CancellationIntents) {}

  /**
   * Records a cancellation intent; a waiting job becomes `cancelled` at once (a worker's claim
   * and this update serialise on the row, so a job cancelled here never starts: a reserved one's start is
   * fenced on the status, and a run's handler waits for its start before it acts).
   * Returns true when this call cancelled the job.
   */
  async cancel(manager: EntityManager, id: string, requestedBy: string | null): Promise<boolean> {
    await this.intents.record(manager, id, requestedBy);
    const result = await manager
      .createQueryBuilder()
      .update(QueueJobEntity)
      .set({
        status: 'cancelled',
        completedAt: () => 'now()',
        updatedAt: () => 'now()',
        error: 'Cancelled before it started',
        // A worker may hold it reserved (prefetch): its start is fenced on the status.
        lockedBy: null,
        lockedAt: null,
        heartbeatAt: null,
      })
      .where({ id, status: In(WAITING) })
      .execute();
    return (result.affected ?? 0) > 0;
  }

  /** The status of each of these jobs that exists, its row locked until the caller's transaction ends (a claim or requeue waits). */
  async lockStatuses(manager: EntityManager, ids: readonly string[]): Promise<Map<string, JobStatus>> {
    const rows: { id: string; status: JobStatus }[] = await manager.query(
      `SELECT id, status FROM queue_jobs WHERE id = ANY ($1::uuid[]) FOR UPDATE`,
      [ids],
    );
    return new Map(rows.map((row) => [row.id, row.status]));
  }

  /** Deletes these jobs and their cancellation intents, with what the caller deletes in its transaction (their runs). */
  async remove(manager: EntityManager, ids: string[]): Promise<void> {
    if (ids.length === 0) {
      return;
    }
    await manager.query(`DELETE FROM queue_jobs WHERE id = ANY ($1::uuid[])`, [ids]);
    await this.intents.clear(manager, ids);
  }
}
