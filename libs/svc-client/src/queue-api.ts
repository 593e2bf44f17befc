import { CliError } from '@app/cli-terminal';

import { AdminApi } from './admin-api';
import { errorDetail, Schemas } from './http';

export type Job = Schemas['JobDto'];
export type JobStatus = Job['status'];
/** The job statuses the api knows (GET /queue/jobs `status`), for checking --status before any request. */
export const JOB_STATUSES = ['queued', 'running', 'completed', 'failed', 'cancelled', 'paused'] as const satisfies readonly JobStatus[];
/** The statuses a requeue applies to. */
export const REQUEUEABLE_STATUSES = ['failed', 'cancelled'] as const satisfies readonly JobStatus[];
/** The statuses a cancel applies to: jobs no worker runs. */
export const CANCELLABLE_STATUSES = ['queued', 'paused'] as const satisfies readonly JobStatus[];
export type PageMeta = Schemas['PageMeta'];
export type QueueStats = Schemas['QueueStatsDto'];
export type JobFilter = Schemas['JobFilterDto'];
export type BulkJobsRequest = Schemas['BulkJobsDto'];
/** What the bulk routes do to the jobs a filter selects: POST /queue/jobs/requeue or /queue/jobs/cancel. */
export type BulkAction = 'requeue' | 'cancel';
export type BulkResult = Schemas['BulkJobsResultDto'];

export interface JobListRequest {
  statuses?: JobStatus[];
  /** Filtered here: GET /queue/jobs has no component filter. */
  componentId?: string;
  limit: number;
}

export interface JobList {
  jobs: Job[];
  meta: {
    /** The --limit asked for. */
    limit: number;
    /** Jobs returned. */
    count: number;
    /** Jobs the api counts for the status filter (every component). */
    total_count: number;
    /** With a component: jobs read to find these (newest first); without one, equal to count. */
    scanned: number;
    /** More jobs may match than were returned (the limit, or the scan bound, was reached). */
    truncated: boolean;
  };
}

/** The api's largest page; the CLI reads through GET /queue/jobs in pages this size. */
const PAGE_SIZE = 1000;
/** With --component the CLI filters client-side and reads at most this many jobs. */
export const COMPONENT_SCAN_MAX = 10_000;

/** What a credential for `svc jobs` needs. */
export const QUEUE_CREDENTIAL_HINT =
  'The queue routes need platform:admin: use SVC_ADMIN_TOKEN with a token that has it, or OS_SECURITY_KEY.';

/** The durable queue's operator routes (/queue/...). */
export class QueueApi extends AdminApi {
  protected readonly credentialHint = QUEUE_CREDENTIAL_HINT;

  /** Newest first, up to `limit`, read page by page; a component filter is applied here over at most COMPONENT_SCAN_MAX jobs. */
  async list(request: JobListRequest): Promise<JobList> {
    const jobs: Job[] = [];
    let scanned = 0;
    let total!: number;
    let truncated = false;
    const pageSize = request.componentId ? PAGE_SIZE : Math.min(PAGE_SIZE, request.limit);
    for (let page = 1; ; page += 1) {
      const query = { status: request.statuses, limit: pageSize, page, sort_by: 'created_at', sort_order: 'desc' } as const;
      const body = this.expect(await this.send(this.client.GET('/queue/jobs', { params: { query } })), 200, 'Could not list queue jobs');
      const rows = body.data;
      total = body.meta?.total_count ?? rows.length;
      scanned += rows.length;
      for (const job of rows) {
        if (jobs.length === request.limit) {
          truncated = true;
          break;
        }
        if (!request.componentId || job.component_id === request.componentId) {
          jobs.push(job);
        }
      }
      const lastPage = page >= (body.meta?.total_pages ?? 1) || rows.length === 0;
      if (lastPage) {
        break;
      }
      if (jobs.length === request.limit || (request.componentId && scanned >= COMPONENT_SCAN_MAX)) {
        truncated = true;
        break;
      }
    }
    if (!request.componentId && total > jobs.length) {
      truncated = true;
    }
    return {
      jobs,
      meta: {
        limit: request.limit,
        count: jobs.length,
        total_count: total,
        scanned: request.componentId ? scanned : jobs.length,
        truncated,
      },
    };
  }

  async get(id: string): Promise<Job> {
    const job = await this.find(id);
    if (!job) {
      throw new CliError(`No queue job '${id}' found.`, 'List them with: svc jobs list');
    }
    return job;
  }

  /** One job, or null when the api has none of that id. */
  async find(id: string): Promise<Job | null> {
    const answer = await this.send(this.client.GET('/queue/jobs/{job_id}', { params: { path: { job_id: id } } }));
    return answer.response.status === 404 ? null : this.expect(answer, 200, `Could not read queue job '${id}'`);
  }

  async stats(): Promise<QueueStats> {
    return this.expect(await this.send(this.client.GET('/queue/stats')), 200, 'Could not read the queue stats');
  }

  /** One job; a refusal of this job (404, 400, 409) is returned as its error, a refusal of the credential throws. */
  async requeue(id: string, options: { force?: boolean; clearCancellation?: boolean }): Promise<{ job: Job } | { error: string }> {
    // Flags that are off are left out of the query, as the api's defaults.
    const query = { force: options.force || undefined, clear_cancellation: options.clearCancellation || undefined };
    const answer = await this.send(this.client.POST('/queue/jobs/{job_id}/requeue', { params: { path: { job_id: id }, query } }));
    if (answer.response.status === 200 && answer.data) {
      return { job: answer.data };
    }
    if (answer.response.status === 404) {
      return { error: `No queue job '${id}' found.` };
    }
    return { error: errorDetail(answer) };
  }

  /** POST /queue/jobs/requeue or /queue/jobs/cancel: a dry run unless dry_run is false. */
  async bulk(action: BulkAction, request: BulkJobsRequest): Promise<BulkResult> {
    const path = action === 'requeue' ? '/queue/jobs/requeue' : '/queue/jobs/cancel';
    const answer = await this.send(this.client.POST(path, { body: request }));
    if (answer.response.status === 404 || answer.response.status === 405) {
      throw new CliError(
        `This service has no bulk ${action} (POST ${path}).`,
        action === 'requeue' ? 'Upgrade the service, or requeue jobs by id: svc jobs requeue <id>...' : 'Upgrade the service.',
      );
    }
    return this.expect(answer, 200, `Could not ${action} jobs`);
  }
}
