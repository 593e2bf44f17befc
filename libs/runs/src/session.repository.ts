import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { Repository } from 'typeorm';

import { DataScope } from '@app/access';
import { fetchPage, PageRequest } from '@app/pagination';
import { JobProducer, TERMINAL_STATUSES } from '@app/queue';

import { SessionSortField } from './session.dto';
import { SessionEntity } from './session.entity';

const SORT_COLUMNS: Record<SessionSortField, string> = { created_at: 'session.created_at', updated_at: 'session.updated_at' };

const ENDED: readonly string[] = TERMINAL_STATUSES;

/** What deleting a session found: no session the scope sees, runs of it not ended yet, or done. */
export type SessionRemoval = { outcome: 'missing' } | { outcome: 'busy'; runs: number } | { outcome: 'removed' };

@Injectable()
export class SessionRepository {
  constructor(
    @InjectRepository(SessionEntity) private readonly rows: Repository<SessionEntity>,
    private readonly jobs: JobProducer,
  ) {}

  async findById(scope: DataScope, id: string): Promise<SessionEntity | null> {
    const session = await this.rows.findOneBy({ id });
    return session && scope.includes(session.userId) ? session : null;
  }

  /**
   * Deletes a session with its runs and their jobs (a run's job has its id), unless one of them has not ended or
   * `assertMayRemove` refuses its owner.
   * The session's row is locked first, so a run joining it meanwhile either lands before the check (and is
   * seen) or after the delete (in a new session of that id). A background run's state is its job's, as every
   * read has it: a run whose job was swept to failed has ended, whatever its own row still says. The runs' spans
   * go with their rows.
   */
  remove(scope: DataScope, id: string, assertMayRemove: (ownerId: string | null) => void): Promise<SessionRemoval> {
    return this.rows.manager.transaction(async (manager) => {
      const found: { user_id: string | null }[] = await manager.query(
        `SELECT user_id FROM sessions WHERE id = $1 AND ${DataScope.preparedWhere('user_id', 2)} FOR UPDATE`,
        [id, scope.ownerId],
      );
      if (found.length === 0) {
        return { outcome: 'missing' };
      }
      // On the row as locked: a refusal ends the transaction, nothing deleted.
      assertMayRemove(found[0].user_id);
      // Its runs and their jobs locked as they are read: a requeue or a claim waits, then finds them gone.
      const runs: { id: string; status: string }[] = await manager.query(`SELECT id, status FROM runs WHERE session_id = $1 FOR UPDATE`, [
        id,
      ]);
      const ids = runs.map((run) => run.id);
      const jobStatus = await this.jobs.lockStatuses(manager, ids);
      const busy = runs.filter((run) => !ENDED.includes(jobStatus.get(run.id) ?? run.status)).length;
      if (busy > 0) {
        return { outcome: 'busy', runs: busy };
      }
      await this.jobs.remove(manager, ids);
      await manager.query(`DELETE FROM runs WHERE session_id = $1`, [id]);
      await manager.query(`DELETE FROM sessions WHERE id = $1`, [id]);
      return { outcome: 'removed' };
    });
  }

  page(scope: DataScope, request: PageRequest<SessionSortField>): Promise<[SessionEntity[], number]> {
    const owner = scope.where('session.user_id');
    return fetchPage(this.rows.createQueryBuilder('session').where(owner.sql, owner.params), request, {
      sort: SORT_COLUMNS[request.sortBy],
      id: 'session.id',
    });
  }
}
