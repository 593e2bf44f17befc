import { Injectable } from '@nestjs/common';
import { z } from 'zod';

import { McpTool, McpToolset } from '@app/mcp';
import { Page } from '@app/pagination';
import {
  BulkJobsDto,
  BulkJobsResultDto,
  JOB_STATUSES,
  JobDto,
  ListJobsQuery,
  QueueAdminService,
  QueueEnabledGuard,
  QueueStatsDto,
  RequeueQuery,
} from '@app/queue';

import { dtoArguments, McpArguments, pageArguments } from '../mcp-arguments';

const jobId = z.string().describe('Job id (the run_id of the background run)');

/** The bulk routes' body: a filter (at least one condition), a dry run by default, a limit; requeue also takes its two flags. */
const cancelArguments = dtoArguments(BulkJobsDto, ['force', 'clear_cancellation']);

/**
 * Operator tools for the durable queue. Like the REST routes: platform:admin first (the mirrored
 * routes' scope), then 503 when this replica's queue is disabled (the same QueueEnabledGuard).
 */
@McpToolset()
@Injectable()
export class QueueTools {
  constructor(
    private readonly queue: QueueAdminService,
    private readonly queueEnabled: QueueEnabledGuard,
    private readonly args: McpArguments,
  ) {}

  @McpTool({
    name: 'list_queue_jobs',
    mirrors: 'GET /queue/jobs',
    description: 'List queue jobs (admins). status ["failed"] is the dead-letter list; ["failed", "cancelled"] the requeueable set.',
    input: z.object({
      status: z.array(z.enum(JOB_STATUSES)).optional().describe('Statuses to match (any of them)'),
      ...pageArguments(ListJobsQuery),
    }),
    annotations: { readOnlyHint: true },
  })
  async list(_principal: unknown, args: Record<string, unknown>): Promise<Page<JobDto>> {
    this.queueEnabled.canActivate();
    return this.queue.list(await this.args.as(ListJobsQuery, args));
  }

  @McpTool({
    name: 'get_queue_job',
    mirrors: 'GET /queue/jobs/:job_id',
    description: 'One queue job (admins).',
    input: z.object({ job_id: jobId }),
    annotations: { readOnlyHint: true },
  })
  get(_principal: unknown, args: Record<string, unknown>): Promise<JobDto> {
    this.queueEnabled.canActivate();
    return this.queue.get(String(args.job_id));
  }

  @McpTool({
    name: 'requeue_queue_job',
    mirrors: 'POST /queue/jobs/:job_id/requeue',
    description:
      'Requeue a failed or cancelled job for one more execution (admins; max_attempts + 1). force=true for a job that failed within the lock grace ' +
      'period (its worker may still run); clear_cancellation=true for a cancelled job whose cancellation is still live.',
    input: z.object({
      job_id: jobId,
      force: z
        .boolean()
        .optional()
        .describe('Requeue even though the job failed within the lock grace: its worker may still be running it'),
      clear_cancellation: z
        .boolean()
        .optional()
        .describe('Drop a still-live cancellation of the job, which would otherwise cancel it again'),
    }),
  })
  async requeue(_principal: unknown, args: Record<string, unknown>): Promise<JobDto> {
    this.queueEnabled.canActivate();
    const { job_id, ...options } = args;
    return this.queue.requeue(String(job_id), await this.args.as(RequeueQuery, options));
  }

  @McpTool({
    name: 'requeue_queue_jobs',
    mirrors: 'POST /queue/jobs/requeue',
    description:
      'Requeue failed or cancelled jobs by filter (admins), each under the single-job rules. Dry run by default: look at matched/changed/skipped, ' +
      'then call again with dry_run=false. force and clear_cancellation as for requeue_queue_job.',
    input: z.object(dtoArguments(BulkJobsDto)),
  })
  async requeueMany(_principal: unknown, args: Record<string, unknown>): Promise<BulkJobsResultDto> {
    this.queueEnabled.canActivate();
    return this.queue.bulkRequeue(await this.args.as(BulkJobsDto, args, 'body'));
  }

  @McpTool({
    name: 'cancel_queue_jobs',
    mirrors: 'POST /queue/jobs/cancel',
    description: 'Cancel queued and paused jobs by filter (admins); running and finished jobs are never touched. Dry run by default.',
    input: z.object(cancelArguments),
  })
  async cancelMany(_principal: unknown, args: Record<string, unknown>): Promise<BulkJobsResultDto> {
    this.queueEnabled.canActivate();
    return this.queue.bulkCancel(await this.args.as(BulkJobsDto, args, 'body'));
  }

  @McpTool({
    name: 'get_queue_stats',
    mirrors: 'GET /queue/stats',
    description: 'Job counts by status and the age of the oldest queued job (admins).',
    annotations: { readOnlyHint: true },
  })
  stats(): Promise<QueueStatsDto> {
    this.queueEnabled.canActivate();
    return this.queue.stats();
  }
}
