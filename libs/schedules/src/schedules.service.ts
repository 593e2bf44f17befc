import { randomUUID } from 'node:crypto';

import { Injectable } from '@nestjs/common';

import { attributedUser, DataScope, Principal } from '@app/access';
import { isUniqueViolation } from '@app/database';
import { Page, toPage } from '@app/pagination';

import { nextRunAt } from './cron';
import { CreateScheduleDto, ListScheduleRunsQuery, ListSchedulesQuery, ScheduleDto, ScheduleRunDto, UpdateScheduleDto } from './schedule.dto';
import { ScheduleEntity } from './schedule.entity';
import { ScheduleErrorCode as Code, ScheduleException } from './schedule.exception';
import { toScheduleDto, toScheduleRunDto } from './schedule.mapper';
import { NAME_CONSTRAINTS, ScheduleRepository } from './schedule.repository';
import { ScheduleRunEntity } from './schedule-run.entity';
import { ScheduleRunRepository } from './schedule-run.repository';
import { targetOf } from './schedule-target';

/** What a PATCH may change (DTO name → entity property). */
const UPDATABLE = {
  name: 'name',
  method: 'method',
  endpoint: 'endpoint',
  cron_expr: 'cronExpr',
  timezone: 'timezone',
  enabled: 'enabled',
  description: 'description',
  payload: 'payload',
  timeout_seconds: 'timeoutSeconds',
  max_retries: 'maxRetries',
  retry_delay_seconds: 'retryDelaySeconds',
} as const satisfies Partial<Record<keyof UpdateScheduleDto, keyof ScheduleEntity>>;

@Injectable()
export class SchedulesService {
  constructor(
    private readonly schedules: ScheduleRepository,
    private readonly runs: ScheduleRunRepository,
  ) {}

  async create(caller: Principal, request: CreateScheduleDto): Promise<ScheduleDto> {
    const now = new Date();
    const schedule = Object.assign(new ScheduleEntity(), {
      id: randomUUID(),
      name: request.name,
      method: request.method ?? 'POST',
      endpoint: request.endpoint,
      cronExpr: request.cron_expr,
      timezone: request.timezone ?? 'UTC',
      timeoutSeconds: request.timeout_seconds ?? 3600,
      maxRetries: request.max_retries ?? 0,
      retryDelaySeconds: request.retry_delay_seconds ?? 60,
      enabled: request.enabled ?? true,
      userId: attributedUser(caller, request.user_id),
      description: request.description ?? null,
      payload: request.payload ?? null,
      managedBy: request.managed_by ?? null,
      disabledReason: null,
      // The rights every fire will carry: the creator's, as they are now, never more.
      creatorKind: caller.kind,
      creatorId: caller.userId,
      creatorScopes: [...caller.scopes],
      creatorServiceAccountId: caller.serviceAccountId ?? null,
      createdAt: now,
      updatedAt: now,
    });
    this.derive(schedule, now);
    await this.write(schedule, () => this.schedules.insert(schedule));
    return toScheduleDto(schedule);
  }

  async list(caller: Principal, query: ListSchedulesQuery): Promise<Page<ScheduleDto>> {
    const startedAt = performance.now();
    const request = query.toPageRequest();
    const [rows, total] = await this.schedules.page(DataScope.of(caller), request, query);
    return toPage(request, rows.map(toScheduleDto), total, startedAt);
  }

  async get(caller: Principal, id: string): Promise<ScheduleDto> {
    return toScheduleDto(await this.find(caller, id));
  }

  /**
   * Absent fields stay as they are; next_run_at follows any change of cron_expr, timezone or
   * enabled. Only the changed columns are written, so a worker advancing next_run_at meanwhile
   * is never overwritten with a stale slot.
   */
  async update(caller: Principal, id: string, request: UpdateScheduleDto): Promise<ScheduleDto> {
    const schedule = await this.find(caller, id);
    const changes: Partial<ScheduleEntity> = {};
    for (const [field, property] of Object.entries(UPDATABLE)) {
      const value = request[field as keyof typeof UPDATABLE];
      if (value !== undefined) {
        Object.assign(changes, { [property]: value });
      }
    }
    if (Object.keys(changes).length === 0) {
      return toScheduleDto(schedule);
    }
    if (request.enabled === true) {
      // Re-enabling is the operator's answer to whatever made the service disable it.
      changes.disabledReason = null;
    }
    const updated = Object.assign(new ScheduleEntity(), schedule, changes, { updatedAt: new Date() });
    const rearm = request.cron_expr !== undefined || request.timezone !== undefined || request.enabled !== undefined;
    this.derive(updated, updated.updatedAt, rearm);
    const written: Partial<ScheduleEntity> = { ...changes, updatedAt: updated.updatedAt, targetType: updated.targetType, targetId: updated.targetId };
    if (rearm) {
      written.nextRunAt = updated.nextRunAt;
    }
    await this.write(updated, () => this.schedules.update(schedule.id, written));
    return toScheduleDto(updated);
  }

  async remove(caller: Principal, id: string): Promise<void> {
    if (!(await this.schedules.delete(DataScope.of(caller), id))) {
      throw this.notFound(id);
    }
  }

  /** Queues a fire now; a worker runs it like a cron tick (with the creator's rights) and next_run_at is untouched. */
  async trigger(caller: Principal, id: string): Promise<ScheduleRunDto> {
    const schedule = await this.find(caller, id);
    if (!schedule.enabled) {
      throw new ScheduleException(Code.Disabled, `Schedule '${id}' is disabled${schedule.disabledReason ? ` (${schedule.disabledReason})` : ''}; enable it first`);
    }
    const run = Object.assign(new ScheduleRunEntity(), {
      id: randomUUID(),
      scheduleId: schedule.id,
      trigger: 'manual',
      status: 'queued',
      dueAt: new Date(),
      startedAt: null,
      completedAt: null,
      lockedBy: null,
      deadlineAt: null,
      attempts: [],
      statusCode: null,
      error: null,
      runId: null,
      runStatus: null,
      createdAt: new Date(),
    } satisfies ScheduleRunEntity);
    await this.runs.insert(run);
    return toScheduleRunDto(run);
  }

  async listRuns(caller: Principal, id: string, query: ListScheduleRunsQuery): Promise<Page<ScheduleRunDto>> {
    const startedAt = performance.now();
    const schedule = await this.find(caller, id);
    const request = query.toPageRequest();
    const [rows, total] = await this.runs.pageOfSchedule(schedule.id, request);
    return toPage(request, rows.map(toScheduleRunDto), total, startedAt);
  }

  async getRun(caller: Principal, id: string, runId: string): Promise<ScheduleRunDto> {
    const schedule = await this.find(caller, id);
    const run = await this.runs.findOfSchedule(schedule.id, runId);
    if (!run) {
      throw new ScheduleException(Code.RunNotFound, `Schedule run '${runId}' not found`);
    }
    return toScheduleRunDto(run);
  }

  /** Target fields follow method and endpoint; next_run_at follows cron, zone and enabled. */
  private derive(schedule: ScheduleEntity, now: Date, rearm = true): void {
    const target = targetOf(schedule.method, schedule.endpoint);
    schedule.targetType = target?.type ?? null;
    schedule.targetId = target?.id ?? null;
    if (rearm) {
      schedule.nextRunAt = schedule.enabled ? nextRunAt(schedule.cronExpr, schedule.timezone, now) : null;
    }
  }

  private async find(caller: Principal, id: string): Promise<ScheduleEntity> {
    const schedule = await this.schedules.findById(DataScope.of(caller), id);
    if (!schedule) {
      throw this.notFound(id);
    }
    return schedule;
  }

  private notFound(id: string): ScheduleException {
    return new ScheduleException(Code.NotFound, `Schedule '${id}' not found`);
  }

  private async write(schedule: ScheduleEntity, operation: () => Promise<void>): Promise<void> {
    try {
      await operation();
    } catch (error) {
      if (NAME_CONSTRAINTS.some((constraint) => isUniqueViolation(error, constraint))) {
        throw new ScheduleException(Code.NameTaken, `Schedule with name '${schedule.name}' already exists`);
      }
      throw error;
    }
  }
}
