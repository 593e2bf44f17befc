import { Body, Controller, Delete, Get, HttpCode, HttpStatus, Param, Patch, Post, Query } from '@nestjs/common';
import {
  ApiAcceptedResponse,
  ApiBody,
  ApiConflictResponse,
  ApiCreatedResponse,
  ApiForbiddenResponse,
  ApiNoContentResponse,
  ApiNotFoundResponse,
  ApiOkResponse,
  ApiOperation,
  ApiTags,
  ApiUnprocessableEntityResponse,
} from '@nestjs/swagger';

import { Principal } from '@app/access';
import { CurrentPrincipal, RequireScope } from '@app/auth';
import { ErrorBodyDto, ValidationErrorBodyDto } from '@app/errors';
import {
  CreateScheduleDto,
  ListScheduleRunsQuery,
  ListSchedulesQuery,
  ScheduleDto,
  ScheduleIdParams,
  SchedulePageDto,
  ScheduleRunDto,
  ScheduleRunIdParams,
  ScheduleRunPageDto,
  SchedulesService,
  UpdateScheduleDto,
} from '@app/schedules';

@ApiTags('schedules')
@ApiUnprocessableEntityResponse({ type: ValidationErrorBodyDto, description: 'Validation error' })
@Controller('schedules')
export class SchedulesController {
  constructor(private readonly schedules: SchedulesService) {}

  @Post()
  // Added to @RequireScope's own 403 description.
  @ApiForbiddenResponse({
    type: ErrorBodyDto,
    description: 'Also when the schedule would call a route you may not call: its fires act with your rights',
  })
  @RequireScope('schedules:write', { anonymous: true })
  @ApiOperation({ summary: 'Create a schedule; its fires carry the rights of the caller creating it' })
  @ApiCreatedResponse({ type: ScheduleDto })
  @ApiConflictResponse({ type: ErrorBodyDto, description: 'The owner already has a schedule with this name' })
  @ApiBody({
    type: CreateScheduleDto,
    examples: {
      nightly: {
        summary: 'A background run of echo-agent every night at 02:00 UTC',
        value: {
          name: 'nightly-echo',
          cron_expr: '0 2 * * *',
          timezone: 'UTC',
          method: 'POST',
          endpoint: '/agents/echo-agent/runs',
          payload: { message: 'Nightly run', background: true },
        },
      },
    },
  })
  create(@CurrentPrincipal() caller: Principal, @Body() request: CreateScheduleDto): Promise<ScheduleDto> {
    return this.schedules.create(caller, request);
  }

  @Get()
  @RequireScope('schedules:read', { anonymous: true })
  @ApiOperation({ summary: 'List schedules' })
  @ApiOkResponse({ type: SchedulePageDto })
  list(@CurrentPrincipal() caller: Principal, @Query() query: ListSchedulesQuery): Promise<SchedulePageDto> {
    return this.schedules.list(caller, query);
  }

  @Get(':schedule_id')
  @RequireScope('schedules:read', { anonymous: true })
  @ApiOperation({ summary: 'Get a schedule' })
  @ApiOkResponse({ type: ScheduleDto })
  @ApiNotFoundResponse({ type: ErrorBodyDto })
  get(@CurrentPrincipal() caller: Principal, @Param() params: ScheduleIdParams): Promise<ScheduleDto> {
    return this.schedules.get(caller, params.schedule_id);
  }

  @Patch(':schedule_id')
  @ApiForbiddenResponse({
    type: ErrorBodyDto,
    description:
      "Also for another principal's schedule without `platform:admin` (or the security key), and when a rewritten call would reach a route you may not call",
  })
  @RequireScope('schedules:write', { anonymous: true })
  @ApiOperation({ summary: 'Update a schedule; absent fields are untouched' })
  @ApiOkResponse({ type: ScheduleDto })
  @ApiNotFoundResponse({ type: ErrorBodyDto })
  @ApiConflictResponse({
    type: ErrorBodyDto,
    description:
      'Renamed onto another schedule of the owner, or resuming a schedule the service disabled because of its owner without taking its call over',
  })
  @ApiBody({
    type: UpdateScheduleDto,
    examples: {
      pause: { summary: 'Pause it, saying why', value: { enabled: false, disabled_reason: 'maintenance window' } },
      resume: { summary: 'Resume it', value: { enabled: true } },
      reschedule: { summary: 'Move it to 03:00', value: { cron_expr: '0 3 * * *' } },
    },
  })
  update(
    @CurrentPrincipal() caller: Principal,
    @Param() params: ScheduleIdParams,
    @Body() request: UpdateScheduleDto,
  ): Promise<ScheduleDto> {
    return this.schedules.update(caller, params.schedule_id, request);
  }

  @Delete(':schedule_id')
  @HttpCode(HttpStatus.NO_CONTENT)
  @ApiForbiddenResponse({
    type: ErrorBodyDto,
    description: "Also for another principal's schedule without `platform:admin` (or the security key)",
  })
  @RequireScope('schedules:delete', { anonymous: true })
  @ApiOperation({ summary: 'Delete a schedule and its history' })
  @ApiNoContentResponse()
  @ApiNotFoundResponse({ type: ErrorBodyDto })
  remove(@CurrentPrincipal() caller: Principal, @Param() params: ScheduleIdParams): Promise<void> {
    return this.schedules.remove(caller, params.schedule_id);
  }

  @Post(':schedule_id/trigger')
  @HttpCode(HttpStatus.ACCEPTED)
  @ApiForbiddenResponse({
    type: ErrorBodyDto,
    description: "Also for another principal's schedule without `platform:admin` (or the security key)",
  })
  @RequireScope('schedules:write', { anonymous: true })
  @ApiOperation({ summary: 'Fire now: queues a fire a worker runs like a cron tick; next_run_at is untouched' })
  @ApiAcceptedResponse({ type: ScheduleRunDto })
  @ApiNotFoundResponse({ type: ErrorBodyDto })
  @ApiConflictResponse({ type: ErrorBodyDto, description: 'The schedule is disabled' })
  trigger(@CurrentPrincipal() caller: Principal, @Param() params: ScheduleIdParams): Promise<ScheduleRunDto> {
    return this.schedules.trigger(caller, params.schedule_id);
  }

  @Get(':schedule_id/runs')
  @RequireScope('schedules:read', { anonymous: true })
  @ApiOperation({ summary: 'History of fires, each with every attempt it made' })
  @ApiOkResponse({ type: ScheduleRunPageDto })
  @ApiNotFoundResponse({ type: ErrorBodyDto })
  runs(
    @CurrentPrincipal() caller: Principal,
    @Param() params: ScheduleIdParams,
    @Query() query: ListScheduleRunsQuery,
  ): Promise<ScheduleRunPageDto> {
    return this.schedules.listRuns(caller, params.schedule_id, query);
  }

  @Get(':schedule_id/runs/:run_id')
  @RequireScope('schedules:read', { anonymous: true })
  @ApiOperation({ summary: 'One fire of a schedule' })
  @ApiOkResponse({ type: ScheduleRunDto })
  @ApiNotFoundResponse({ type: ErrorBodyDto })
  run(@CurrentPrincipal() caller: Principal, @Param() params: ScheduleRunIdParams): Promise<ScheduleRunDto> {
    return this.schedules.getRun(caller, params.schedule_id, params.run_id);
  }
}
