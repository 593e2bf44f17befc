import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { Repository } from 'typeorm';

import { fetchPage, PageRequest } from '@app/pagination';

import { SCHEDULE_FIRES_READY_CHANNEL } from './schedule-fire-store';
import { FireState, fireStates } from './schedule-overlap';
import { ScheduleRunEntity } from './schedule-run.entity';
import { ScheduleRunSortField } from './schedule-sorting';

const SORT_COLUMNS: Record<ScheduleRunSortField, string> = {
  created_at: 'run.created_at',
  due_at: 'run.due_at',
  completed_at: 'run.completed_at',
};

/** The history of fires. Callers reach it only through a schedule they may see. */
@Injectable()
export class ScheduleRunRepository {
  constructor(@InjectRepository(ScheduleRunEntity) private readonly rows: Repository<ScheduleRunEntity>) {}

  /** A queued fire is announced to the workers' fire engines when its insert commits. */
  async insert(run: ScheduleRunEntity): Promise<void> {
    await this.rows.manager.transaction(async (manager) => {
      await manager.insert(ScheduleRunEntity, run);
      if (run.status === 'queued') {
        await manager.query(`SELECT pg_notify($1, '')`, [SCHEDULE_FIRES_READY_CHANNEL]);
      }
    });
  }

  /** Whether a fire of the schedule runs and how many wait: what its overlap policy decides a new fire by. */
  async fireState(scheduleId: string): Promise<FireState> {
    return (await fireStates((text, values) => this.rows.manager.query(text, values), [scheduleId])).get(scheduleId)!;
  }

  findOfSchedule(scheduleId: string, id: string): Promise<ScheduleRunEntity | null> {
    return this.rows.findOneBy({ id, scheduleId });
  }

  pageOfSchedule(scheduleId: string, request: PageRequest<ScheduleRunSortField>): Promise<[ScheduleRunEntity[], number]> {
    const query = this.rows.createQueryBuilder('run').where('run.schedule_id = :scheduleId', { scheduleId });
    // Unfinished fires last by completed_at. Only that column has NULLs: asked of created_at, the NULLS LAST
    // order no index gives made the newest page a sort of the schedule's whole history.
    return fetchPage(query, request, { sort: SORT_COLUMNS[request.sortBy], id: 'run.id', nullsLast: request.sortBy === 'completed_at' });
  }
}
