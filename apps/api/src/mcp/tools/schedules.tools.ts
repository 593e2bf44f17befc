import { Injectable } from '@nestjs/common';
import { z } from 'zod';

import { Principal } from '@app/access';
import { McpTool, McpToolset } from '@app/mcp';
import { Page } from '@app/pagination';
import {
  CreateScheduleDto,
  ListScheduleRunsQuery,
  ListSchedulesQuery,
  ScheduleDto,
  ScheduleIdParams,
  ScheduleRunDto,
  ScheduleRunPageDto,
  SchedulesService,
  UpdateScheduleDto,
} from '@app/schedules';

import { dtoArguments, McpArguments, pageArguments } from '../mcp-arguments';

const scheduleId = z.string().describe('Schedule id (UUID)');
/** Schedules call an endpoint of this service on a cron expression, with the rights of their owner (whoever created or last changed them). */
@McpToolset()
@Injectable()
export class ScheduleTools {
  constructor(
    private readonly schedules: SchedulesService,
    private readonly args: McpArguments,
  ) {}

  @McpTool({
    name: 'list_schedules',
    mirrors: 'GET /schedules',
    description: 'List schedules, optionally only enabled or disabled ones, those of one target, or those one tool manages.',
    input: z.object({ ...dtoArguments(ListSchedulesQuery), ...pageArguments(ListSchedulesQuery) }),
    annotations: { readOnlyHint: true },
  })
  async list(principal: Principal, args: Record<string, unknown>): Promise<Page<ScheduleDto>> {
    return this.schedules.list(principal, await this.args.as(ListSchedulesQuery, args));
  }

  @McpTool({
    name: 'get_schedule',
    mirrors: 'GET /schedules/:schedule_id',
    description: 'One schedule.',
    input: z.object({ schedule_id: scheduleId }),
    annotations: { readOnlyHint: true },
  })
  async get(principal: Principal, args: Record<string, unknown>): Promise<ScheduleDto> {
    return this.schedules.get(principal, (await this.idOf(args)).schedule_id);
  }

  @McpTool({
    name: 'create_schedule',
    mirrors: 'POST /schedules',
    description:
      'Create a schedule that calls an endpoint of this service (e.g. /agents/echo-agent/runs) on a cron expression. You must hold the scope that endpoint requires; the schedule fires with your rights. /schedules endpoints are refused.',
    // Strict, as the REST body is: a misspelt field is refused, not dropped.
    input: z.object(dtoArguments(CreateScheduleDto)).strict(),
  })
  async create(principal: Principal, args: Record<string, unknown>): Promise<ScheduleDto> {
    return this.schedules.create(principal, await this.args.as(CreateScheduleDto, args, 'body'));
  }

  @McpTool({
    name: 'update_schedule',
    mirrors: 'PATCH /schedules/:schedule_id',
    description:
      "Update a schedule; fields left out are untouched. enabled=false pauses it. You become its owner: it fires with your rights. Another principal's schedule needs platform:admin.",
    input: z.object({ schedule_id: scheduleId, ...dtoArguments(UpdateScheduleDto) }).strict(),
  })
  async update(principal: Principal, args: Record<string, unknown>): Promise<ScheduleDto> {
    const { schedule_id, ...changes } = args;
    const { schedule_id: id } = await this.idOf({ schedule_id });
    return this.schedules.update(principal, id, await this.args.as(UpdateScheduleDto, changes, 'body'));
  }

  @McpTool({
    name: 'trigger_schedule',
    mirrors: 'POST /schedules/:schedule_id/trigger',
    description: 'Fire a schedule now (a worker runs the fire like a cron tick); returns the queued fire.',
    input: z.object({ schedule_id: scheduleId }),
  })
  async trigger(principal: Principal, args: Record<string, unknown>): Promise<ScheduleRunDto> {
    return this.schedules.trigger(principal, (await this.idOf(args)).schedule_id);
  }

  @McpTool({
    name: 'delete_schedule',
    mirrors: 'DELETE /schedules/:schedule_id',
    description: 'Delete a schedule and its history.',
    input: z.object({ schedule_id: scheduleId }),
    annotations: { destructiveHint: true },
  })
  async remove(principal: Principal, args: Record<string, unknown>): Promise<{ deleted: string }> {
    const { schedule_id } = await this.idOf(args);
    await this.schedules.remove(principal, schedule_id);
    return { deleted: schedule_id };
  }

  @McpTool({
    name: 'list_schedule_runs',
    mirrors: 'GET /schedules/:schedule_id/runs',
    description: 'History of a schedule’s fires, each with its attempts.',
    input: z.object({ schedule_id: scheduleId, ...pageArguments(ListScheduleRunsQuery) }),
    annotations: { readOnlyHint: true },
  })
  async runs(principal: Principal, args: Record<string, unknown>): Promise<ScheduleRunPageDto> {
    const { schedule_id, ...query } = args;
    const { schedule_id: id } = await this.idOf({ schedule_id });
    return this.schedules.listRuns(principal, id, await this.args.as(ListScheduleRunsQuery, query));
  }

  private idOf(args: Record<string, unknown>): Promise<ScheduleIdParams> {
    return this.args.as(ScheduleIdParams, { schedule_id: args.schedule_id }, 'param');
  }
}
