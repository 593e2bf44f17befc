import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { Repository } from 'typeorm';

import { DataScope } from '@app/access';
import { fetchPage, PageRequest } from '@app/pagination';

import { ScheduleEntity } from './schedule.entity';
import { ScheduleSortField } from './schedule-sorting';

const SORT_COLUMNS: Record<ScheduleSortField, string> = {
  created_at: 'schedule.created_at',
  updated_at: 'schedule.updated_at',
  name: 'schedule.name',
  next_run_at: 'schedule.next_run_at',
};

export interface ScheduleFilters {
  enabled?: boolean;
  target_type?: string;
  target_id?: string;
  managed_by?: string;
}

export const NAME_CONSTRAINTS = ['UQ_schedules_owner_name', 'UQ_schedules_unowned_name'];

/** Every read and write takes the caller's DataScope first. */
@Injectable()
export class ScheduleRepository {
  constructor(@InjectRepository(ScheduleEntity) private readonly rows: Repository<ScheduleEntity>) {}

  /** Disables the enabled schedules these service accounts own, saying why (`owner_revoked:sa:<name>`). */
  async disableOwnedByRevoked(accountIds: string[]): Promise<void> {
    await this.rows.query(
      `UPDATE schedules SET enabled = false, next_run_at = NULL, disabled_reason = 'owner_revoked:' || owner_id, updated_at = now()
       WHERE owner_service_account_id = ANY ($1::uuid[]) AND enabled`,
      [accountIds],
    );
  }

  async insert(schedule: ScheduleEntity): Promise<void> {
    await this.rows.insert(schedule);
  }

  /** Writes only the given columns; callers have already checked the scope. */
  async update(id: string, changes: Partial<ScheduleEntity>): Promise<void> {
    await this.rows.update({ id }, changes);
  }

  async findById(scope: DataScope, id: string): Promise<ScheduleEntity | null> {
    const schedule = await this.rows.findOneBy({ id });
    return schedule && scope.includes(schedule.userId) ? schedule : null;
  }

  async delete(scope: DataScope, id: string): Promise<boolean> {
    const owner = scope.where('user_id');
    const result = await this.rows.createQueryBuilder().delete().where('id = :id', { id }).andWhere(owner.sql, owner.params).execute();
    return (result.affected ?? 0) > 0;
  }

  async page(scope: DataScope, request: PageRequest<ScheduleSortField>, filters: ScheduleFilters): Promise<[ScheduleEntity[], number]> {
    const owner = scope.where('schedule.user_id');
    const query = this.rows.createQueryBuilder('schedule').where(owner.sql, owner.params);
    if (filters.enabled !== undefined) {
      query.andWhere('schedule.enabled = :enabled', { enabled: filters.enabled });
    }
    if (filters.target_type !== undefined) {
      query.andWhere('schedule.target_type = :targetType', { targetType: filters.target_type });
    }
    if (filters.target_id !== undefined) {
      query.andWhere('schedule.target_id = :targetId', { targetId: filters.target_id });
    }
    if (filters.managed_by !== undefined) {
      query.andWhere('schedule.managed_by = :managedBy', { managedBy: filters.managed_by });
    }
    return fetchPage(query, request, { sort: SORT_COLUMNS[request.sortBy], id: 'schedule.id', nullsLast: true });
  }
}
