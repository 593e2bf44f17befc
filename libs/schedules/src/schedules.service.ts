import { randomUUID } from 'node:crypto';

import { Injectable } from '@nestjs/common';

import { ADMIN_SCOPE, attributedUser, DataScope, mayUse, missingScopeDetail, Principal } from '@app/access';
import { Env } from '@app/config';
import { isUniqueViolation, timeOrderedId } from '@app/database';
import { ValidationFailedException } from '@app/errors';
import { Page, toPage } from '@app/pagination';
import { ServiceAccountsService } from '@app/service-accounts';

import { nextRunAt } from './cron';
import { securityKeyFingerprint } from './owner-key';
import {
  CreateScheduleDto,
  ListScheduleRunsQuery,
  ListSchedulesQuery,
  ScheduleDto,
  ScheduleRunDto,
  UpdateScheduleDto,
} from './schedule.dto';
import { ScheduleEntity } from './schedule.entity';
import { ScheduleErrorCode as Code, ScheduleException } from './schedule.exception';
import { toScheduleDto, toScheduleRunDto } from './schedule.mapper';
import { NAME_CONSTRAINTS, ScheduleRepository } from './schedule.repository';
import { EndpointRoute, EndpointScopes, routedPath } from './schedule-endpoint';
import { admit, SKIP_ERRORS } from './schedule-overlap';
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
  overlap_policy: 'overlapPolicy',
  catchup_policy: 'catchupPolicy',
  catchup_limit: 'catchupLimit',
  disabled_reason: 'disabledReason',
} as const satisfies Partial<Record<keyof UpdateScheduleDto, keyof ScheduleEntity>>;

@Injectable()
export class SchedulesService {
  constructor(
    private readonly schedules: ScheduleRepository,
    private readonly runs: ScheduleRunRepository,
    private readonly endpoints: EndpointScopes,
    private readonly env: Env,
    accounts: ServiceAccountsService,
  ) {
    // A revoked account's schedules stop at once: an operator answering a leaked token sees them disabled now,
    // not at their next slot (a monthly one would look healthy for a month).
    accounts.onRevoked((accountIds) => this.schedules.disableOwnedByRevoked(accountIds));
  }

  async create(caller: Principal, request: CreateScheduleDto): Promise<ScheduleDto> {
    refuseScheduleFires(caller);
    const method = request.method ?? 'POST';
    this.assertMayCall(caller, method, request.endpoint, request.payload);
    const now = new Date();
    const schedule = Object.assign(new ScheduleEntity(), {
      id: randomUUID(),
      name: request.name,
      method,
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
      overlapPolicy: request.overlap_policy ?? 'skip',
      catchupPolicy: request.catchup_policy ?? 'once',
      catchupLimit: request.catchup_limit ?? 10,
      ...(await this.ownedBy(caller)),
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
    const schedule = await this.findToChange(caller, id);
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
    if (request.disabled_reason !== undefined && request.enabled !== false) {
      throw new ValidationFailedException([
        {
          loc: ['body', 'disabled_reason'],
          msg: 'disabled_reason goes with enabled: false',
          type: 'value_error',
          input: request.disabled_reason,
          ctx: {},
        },
      ]);
    }
    if (request.enabled === true) {
      // Re-enabling is the operator's answer to whatever disabled it.
      changes.disabledReason = null;
    }
    // Whoever writes a schedule's call (method, endpoint or payload) owns it from then on: its fires act with that
    // caller's rights, which must cover the call. An admin's other changes (pause, resume, rename, cron, retries)
    // keep the owner and so its rights: pausing someone's schedule lends it nothing. The owner's own changes
    // record its rights afresh; pausing needs no check (an owner who lost the scope can still pause it).
    const rewritesCall = changes.method !== undefined || changes.endpoint !== undefined || changes.payload !== undefined;
    if (request.enabled === true && !rewritesCall && !isOwner(caller, schedule) && schedule.disabledReason?.startsWith('owner_')) {
      // Resumed as it is, it would be disabled again at its next slot, which may be a month away.
      throw new ScheduleException(
        Code.OwnerCannotAct,
        `Schedule '${id}' was disabled because its owner can no longer make its call (${schedule.disabledReason}); resuming keeps that owner. To run it with your rights, send its method, endpoint or payload (even unchanged) with enabled: true`,
      );
    }
    if (rewritesCall || isOwner(caller, schedule)) {
      if (rewritesCall || (changes.enabled ?? schedule.enabled)) {
        this.assertMayCall(
          caller,
          changes.method ?? schedule.method,
          changes.endpoint ?? schedule.endpoint,
          changes.payload === undefined ? schedule.payload : changes.payload,
        );
      }
      Object.assign(changes, await this.ownedBy(caller));
    }
    const updated = Object.assign(new ScheduleEntity(), schedule, changes, { updatedAt: new Date() });
    const rearm = request.cron_expr !== undefined || request.timezone !== undefined || request.enabled !== undefined;
    this.derive(updated, updated.updatedAt, rearm);
    const written: Partial<ScheduleEntity> = {
      ...changes,
      updatedAt: updated.updatedAt,
      targetType: updated.targetType,
      targetId: updated.targetId,
    };
    if (rearm) {
      written.nextRunAt = updated.nextRunAt;
    }
    await this.write(updated, () => this.schedules.update(schedule.id, written));
    return toScheduleDto(updated);
  }

  async remove(caller: Principal, id: string): Promise<void> {
    await this.findToChange(caller, id);
    if (!(await this.schedules.delete(DataScope.of(caller), id))) {
      throw this.notFound(id);
    }
  }

  /**
   * Queues a fire now; a worker runs it like a cron tick (with the owner's rights) and next_run_at is
   * untouched. The overlap policy applies as to a tick: a fire it drops is recorded as skipped and answered so.
   * The owner triggering must be able to make the call now: the rights recorded when it wrote the schedule may
   * be wider than those of the credential it holds today (another of its tokens, narrower scopes). An admin's
   * trigger lends nothing, as with its other changes.
   */
  async trigger(caller: Principal, id: string): Promise<ScheduleRunDto> {
    const schedule = await this.findToChange(caller, id);
    if (isOwner(caller, schedule)) {
      const route = this.endpoints.routeOf(schedule.method, schedule.endpoint, schedule.payload);
      this.assertMayMake(caller, schedule.method, schedule.endpoint, route);
    }
    if (!schedule.enabled) {
      throw new ScheduleException(
        Code.Disabled,
        `Schedule '${id}' is disabled${schedule.disabledReason ? ` (${schedule.disabledReason})` : ''}; enable it first`,
      );
    }
    const [reason] = admit(schedule.overlapPolicy, await this.runs.fireState(schedule.id), 1);
    const now = new Date();
    const run = Object.assign(new ScheduleRunEntity(), {
      id: timeOrderedId(),
      scheduleId: schedule.id,
      trigger: 'manual',
      status: reason ? 'skipped' : 'queued',
      reason,
      dueAt: now,
      startedAt: null,
      completedAt: reason ? now : null,
      lockedBy: null,
      heartbeatAt: null,
      attempts: [],
      statusCode: null,
      error: reason ? SKIP_ERRORS[reason] : null,
      runId: null,
      runStatus: null,
      createdAt: now,
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

  /** A schedule the caller may change, delete or trigger: its own, or any for an admin. */
  private async findToChange(caller: Principal, id: string): Promise<ScheduleEntity> {
    refuseScheduleFires(caller);
    const schedule = await this.find(caller, id);
    if (!isOwner(caller, schedule) && !mayUse(caller, ADMIN_SCOPE)) {
      throw new ScheduleException(
        Code.Forbidden,
        `Schedule '${id}' belongs to another principal: changing, deleting or triggering it requires ${ADMIN_SCOPE}`,
      );
    }
    return schedule;
  }

  /**
   * A schedule may only make a call its owner could make now, and never one to the schedule routes
   * (no loops, no way around the owner check) or to a route no fire can use (see unschedulable). A call no
   * route answers needs no scope: it fails with 404 when it fires.
   */
  private assertMayCall(caller: Principal, method: string, endpoint: string, payload: unknown): void {
    const route = this.endpoints.routeOf(method, endpoint, payload);
    const refusal = unschedulable(endpoint, route);
    if (refusal) {
      throw new ValidationFailedException([{ loc: ['body', 'endpoint'], ...refusal, input: endpoint, ctx: {} }]);
    }
    this.assertMayMake(caller, method, endpoint, route);
  }

  /** The caller holds the scope of the call's route (a schedule's fire checks the rest of it). */
  private assertMayMake(caller: Principal, method: string, endpoint: string, route: EndpointRoute | null): void {
    if (route?.scope && !mayUse(caller, route.scope)) {
      throw new ScheduleException(
        Code.Forbidden,
        `The schedule would call ${method} ${endpoint}, which you may not call. ${missingScopeDetail(route.scope)}`,
      );
    }
  }

  /**
   * The owner columns for `caller`: its credential kind, identity and scopes as they are now, and which security key
   * it holds. A new owner starts with no refusals of its credential behind it.
   */
  private async ownedBy(
    caller: Principal,
  ): Promise<
    Pick<ScheduleEntity, 'ownerKind' | 'ownerId' | 'ownerScopes' | 'ownerServiceAccountId' | 'ownerKeyFingerprint' | 'ownerRefusedSince'>
  > {
    const key = caller.kind === 'security_key' ? this.env.OS_SECURITY_KEY : undefined;
    return {
      ownerKind: caller.kind,
      ownerId: caller.userId,
      ownerScopes: [...caller.scopes],
      ownerServiceAccountId: caller.serviceAccountId ?? null,
      ownerKeyFingerprint: key ? await securityKeyFingerprint(key) : null,
      ownerRefusedSince: null,
    };
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

function isOwner(caller: Principal, schedule: ScheduleEntity): boolean {
  return (
    caller.kind === schedule.ownerKind &&
    caller.userId === schedule.ownerId &&
    (caller.serviceAccountId ?? null) === schedule.ownerServiceAccountId
  );
}

/** A schedule's fire never writes schedules, whatever its owner may do (a schedule targeting POST /mcp, say). */
function refuseScheduleFires(caller: Principal): void {
  if (caller.scheduleId) {
    throw new ScheduleException(Code.Forbidden, 'A schedule cannot create, change, delete or trigger schedules');
  }
}

/**
 * Why a schedule may not call `endpoint`, if it may not: the schedule routes however the path is spelled
 * (`//schedules`, `/x/../schedules`, `%73chedules`), and routes no fire can use.
 */
function unschedulable(endpoint: string, route: EndpointRoute | null): { msg: string; type: string } | null {
  const path = routedPath(endpoint);
  if (path === null) {
    // Every fire would be a 400.
    return { msg: 'endpoint holds a malformed percent-escape (% not followed by UTF-8 bytes in hex)', type: 'malformed_escape' };
  }
  if (/^\/+schedules(\/|$)/i.test(path)) {
    return { msg: 'A schedule cannot call the schedule routes (/schedules...)', type: 'schedule_route' };
  }
  return route?.unschedulable ? { msg: route.unschedulable, type: 'unschedulable_route' } : null;
}
