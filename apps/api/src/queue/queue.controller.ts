import { Body, Controller, Get, HttpCode, HttpStatus, Param, Post, Query, UseGuards } from '@nestjs/common';
import {
  ApiBadRequestResponse,
  ApiBody,
  ApiConflictResponse,
  ApiNotFoundResponse,
  ApiOkResponse,
  ApiOperation,
  ApiServiceUnavailableResponse,
  ApiTags,
  ApiUnprocessableEntityResponse,
} from '@nestjs/swagger';

import { ADMIN_SCOPE } from '@app/access';
import { RequireScope } from '@app/auth';
import { ErrorBodyDto, ValidationErrorBodyDto } from '@app/errors';
import {
  BulkJobsDto,
  BulkJobsResultDto,
  JobDto,
  JobIdParams,
  JobPageDto,
  ListJobsQuery,
  QUEUE_DISABLED_DETAIL,
  QueueAdminService,
  QueueEnabledGuard,
  QueueStatsDto,
  RequeueQuery,
} from '@app/queue';

@ApiTags('queue')
@UseGuards(QueueEnabledGuard)
@ApiServiceUnavailableResponse({ type: ErrorBodyDto, description: QUEUE_DISABLED_DETAIL })
@ApiUnprocessableEntityResponse({ type: ValidationErrorBodyDto, description: 'Validation error' })
@Controller('queue')
export class QueueController {
  constructor(private readonly queue: QueueAdminService) {}

  @Get('jobs')
  @RequireScope(ADMIN_SCOPE, { anonymous: true })
  @ApiOperation({ summary: 'List queue jobs; status=failed is the dead-letter list' })
  @ApiOkResponse({ type: JobPageDto })
  list(@Query() query: ListJobsQuery): Promise<JobPageDto> {
    return this.queue.list(query);
  }

  @Get('stats')
  @RequireScope(ADMIN_SCOPE, { anonymous: true })
  @ApiOperation({ summary: 'Job counts by status and the age of the oldest queued job' })
  @ApiOkResponse({ type: QueueStatsDto })
  stats(): Promise<QueueStatsDto> {
    return this.queue.stats();
  }

  @Post('jobs/requeue')
  @HttpCode(HttpStatus.OK)
  @RequireScope(ADMIN_SCOPE, { anonymous: true })
  @ApiOperation({ summary: 'Requeue failed or cancelled jobs by filter, each under the single-job rules; a dry run unless dry_run=false' })
  @ApiOkResponse({ type: BulkJobsResultDto })
  @ApiBody({
    type: BulkJobsDto,
    examples: {
      failed: { summary: "fail-agent's failed jobs (a dry run)", value: { filter: { status: ['failed'], component_id: 'fail-agent' } } },
      requeue: { summary: 'Requeue them', value: { filter: { status: ['failed'], component_id: 'fail-agent' }, dry_run: false } },
    },
  })
  requeueMany(@Body() body: BulkJobsDto): Promise<BulkJobsResultDto> {
    return this.queue.bulkRequeue(body);
  }

  @Post('jobs/cancel')
  @HttpCode(HttpStatus.OK)
  @RequireScope(ADMIN_SCOPE, { anonymous: true })
  @ApiOperation({ summary: 'Cancel queued and paused jobs by filter; a dry run unless dry_run=false' })
  @ApiOkResponse({ type: BulkJobsResultDto })
  @ApiBody({
    type: BulkJobsDto,
    examples: {
      queued: { summary: "sleep-agent's queued jobs (a dry run)", value: { filter: { status: ['queued'], component_id: 'sleep-agent' } } },
      cancel: { summary: 'Cancel them', value: { filter: { status: ['queued'], component_id: 'sleep-agent' }, dry_run: false } },
    },
  })
  cancelMany(@Body() body: BulkJobsDto): Promise<BulkJobsResultDto> {
    return this.queue.bulkCancel(body);
  }

  @Get('jobs/:job_id')
  @RequireScope(ADMIN_SCOPE, { anonymous: true })
  @ApiOperation({ summary: 'One queue job' })
  @ApiOkResponse({ type: JobDto })
  @ApiNotFoundResponse({ type: ErrorBodyDto })
  get(@Param() { job_id }: JobIdParams): Promise<JobDto> {
    return this.queue.get(job_id);
  }

  @Post('jobs/:job_id/requeue')
  @HttpCode(HttpStatus.OK)
  @RequireScope(ADMIN_SCOPE, { anonymous: true })
  @ApiOperation({ summary: 'Requeue a failed or cancelled job for one more execution (max_attempts + 1)' })
  @ApiOkResponse({ type: JobDto })
  @ApiBadRequestResponse({ type: ErrorBodyDto, description: 'The job is neither failed nor cancelled' })
  @ApiNotFoundResponse({ type: ErrorBodyDto })
  @ApiConflictResponse({
    type: ErrorBodyDto,
    description: 'Failed within the lock grace period: its worker may still be executing; retry later or pass force=true',
  })
  requeue(@Param() { job_id }: JobIdParams, @Query() query: RequeueQuery): Promise<JobDto> {
    return this.queue.requeue(job_id, query);
  }
}
