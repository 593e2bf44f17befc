import { CliError } from '@app/cli-terminal';

import { AdminApi, queryString } from './admin-api';
import { errorDetail } from './http';

/** The job statuses the api knows (GET /queue/jobs `status`). */
export const JOB_STATUSES = ['queued', 'running', 'completed', 'failed', 'cancelled', 'paused'] as const;
export type JobStatus = (typeof JOB_STATUSES)[number];
/** The statuses a requeue applies to. */
export const REQUEUEABLE_STATUSES = ['failed', 'cancelled'] as const;

/** A queue job as GET /queue/jobs/{id} answers it. */
export interface Job {
  id: string;
  component_type: string;
  component_id: string;
  session_id: string;
  job_type: string;
  user_id: string | null;
  payload: Record<string, unknown>;
  status: JobStatus;
  attempt: number;
  max_attempts: number;
  idempotency_key: string | null;
  available_at: number | null;
  locked_by: string | null;
  locked_at: number | null;
  error: string | null;
  created_at: number | null;
  updated_at: number | null;
  completed_at: number | null;
}

export interface PageMeta {
  page: number;
  limit: number;
  total_pages: number;
  total_count: number;
  search_time_ms: number;
}

export interface QueueStats {
  counts: Record<JobStatus, number>;
  oldest_queued_age_seconds: number | null;
}

export interface JobFilter {
  status?: string[];
  component_id?: string;
  created_after?: number;
  created_before?: number;
}

export interface BulkRequeueRequest {
  filter: JobFilter;
  dry_run: boolean;
  limit?: number;
  force?: boolean;
  clear_cancellation?: boolean;
}

export interface BulkResult {
  dry_run: boolean;
  matched: number;
  changed: number;
  skipped: { id: string; reason: string }[];
}

export interface JobListRequest {
  statuses?: string[];
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

const ADMIN_HINT = 'The queue routes need platform:admin: use SVC_ADMIN_TOKEN with a token that has it, or OS_SECURITY_KEY.';

/** The durable queue's operator routes (/queue/...). */
export class QueueApi extends AdminApi {
  protected readonly credentialHint = ADMIN_HINT;

  /** Newest first, up to `limit`, read page by page; a component filter is applied here over at most COMPONENT_SCAN_MAX jobs. */
  async list(request: JobListRequest): Promise<JobList> {
    const jobs: Job[] = [];
    let scanned = 0;
    let total!: number;
    let truncated = false;
    const pageSize = request.componentId ? PAGE_SIZE : Math.min(PAGE_SIZE, request.limit);
    for (let page = 1; ; page += 1) {
      const result = await this.call(
        'GET',
        `/queue/jobs${queryString({ status: request.statuses, limit: pageSize, page, sort_by: 'created_at', sort_order: 'desc' })}`,
      );
      if (result.status !== 200) {
        throw this.failure('Could not list queue jobs', result);
      }
      const rows = result.body.data as Job[];
      total = result.body.meta?.total_count ?? rows.length;
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
      const lastPage = page >= (result.body.meta?.total_pages ?? 1) || rows.length === 0;
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
    const result = await this.call('GET', `/queue/jobs/${encodeURIComponent(id)}`);
    if (result.status === 404) {
      throw new CliError(`No queue job '${id}' found.`, 'List them with: svc jobs list');
    }
    if (result.status !== 200) {
      throw this.failure(`Could not read queue job '${id}'`, result);
    }
    return result.body as Job;
  }

  async stats(): Promise<QueueStats> {
    const result = await this.call('GET', '/queue/stats');
    if (result.status !== 200) {
      throw this.failure('Could not read the queue stats', result);
    }
    return result.body as QueueStats;
  }

  /** One job; a refusal of this job (404, 400, 409) is returned as its error, a refusal of the credential throws. */
  async requeue(id: string, options: { force?: boolean; clearCancellation?: boolean }): Promise<{ job: Job } | { error: string }> {
    const flags = queryString({
      force: options.force ? 'true' : undefined,
      clear_cancellation: options.clearCancellation ? 'true' : undefined,
    });
    const result = await this.call('POST', `/queue/jobs/${encodeURIComponent(id)}/requeue${flags}`);
    if (result.status === 200) {
      return { job: result.body as Job };
    }
    if (result.status === 404) {
      return { error: `No queue job '${id}' found.` };
    }
    return { error: errorDetail(result) };
  }

  /** POST /queue/jobs/requeue: a dry run unless dry_run is false. */
  async bulkRequeue(request: BulkRequeueRequest): Promise<BulkResult> {
    const result = await this.call('POST', '/queue/jobs/requeue', request);
    if (result.status === 404 || result.status === 405) {
      throw new CliError(
        'This service has no bulk requeue (POST /queue/jobs/requeue).',
        'Upgrade the service, or requeue jobs by id: svc jobs requeue <id>...',
      );
    }
    if (result.status !== 200) {
      throw this.failure('Could not requeue jobs', result);
    }
    return result.body as BulkResult;
  }
}
