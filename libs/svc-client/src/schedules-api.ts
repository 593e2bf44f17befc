import { CliError } from '@app/cli-terminal';

import { AdminApi, queryString } from './admin-api';
import { HttpResult } from './http';
import { PageMeta } from './queue-api';

/** A schedule as GET /schedules/{id} answers it. */
export interface Schedule {
  id: string;
  name: string;
  method: string;
  endpoint: string;
  cron_expr: string;
  timezone: string;
  timeout_seconds: number;
  max_retries: number;
  retry_delay_seconds: number;
  enabled: boolean;
  user_id: string | null;
  description: string | null;
  payload: Record<string, unknown> | null;
  next_run_at: number | null;
  managed_by: string | null;
  target_type: string | null;
  target_id: string | null;
  disabled_reason: string | null;
  /** Policies of services that have them: what a fire does while the previous one runs, and with missed slots. */
  overlap_policy?: string;
  catchup_policy?: string;
  catchup_limit?: number;
  created_at: number;
  updated_at: number;
  [field: string]: unknown;
}

export interface ScheduleAttempt {
  attempt: number;
  started_at: number;
  completed_at: number;
  duration_ms: number;
  status_code: number | null;
  error: string | null;
  run_id: string | null;
  run_status: string | null;
}

/** One fire of a schedule (GET /schedules/{id}/runs). */
export interface ScheduleRun {
  id: string;
  schedule_id: string;
  trigger: string;
  status: string;
  /** Why a policy skipped the fire (`overlap`, `missed`, `buffer_full`), on services that have policies. */
  reason?: string | null;
  due_at: number;
  started_at: number | null;
  completed_at: number | null;
  status_code: number | null;
  error: string | null;
  run_id: string | null;
  run_status: string | null;
  attempts: ScheduleAttempt[];
  created_at: number;
  [field: string]: unknown;
}

const SCHEDULES_HINT =
  'Use SVC_ADMIN_TOKEN with schedules:read (schedules:write to trigger, pause or resume; platform:admin for schedules another principal owns), or OS_SECURITY_KEY.';
const PAGE_SIZE = 100;

/** The schedules API (/schedules/...). */
export class SchedulesApi extends AdminApi {
  protected readonly credentialHint = SCHEDULES_HINT;

  /** Every schedule the credential may see, oldest first, page by page. */
  async list(): Promise<Schedule[]> {
    const schedules: Schedule[] = [];
    for (let page = 1; ; page += 1) {
      const result = await this.call(
        'GET',
        `/schedules${queryString({ limit: PAGE_SIZE, page, sort_by: 'created_at', sort_order: 'asc' })}`,
      );
      if (result.status !== 200) {
        throw this.failure('Could not list schedules', result);
      }
      schedules.push(...(result.body.data as Schedule[]));
      if (page >= (result.body.meta?.total_pages ?? 1) || result.body.data.length === 0) {
        return schedules;
      }
    }
  }

  async get(id: string): Promise<Schedule> {
    const result = await this.call('GET', `/schedules/${encodeURIComponent(id)}`);
    this.expectFound(id, result);
    if (result.status !== 200) {
      throw this.failure(`Could not read schedule '${id}'`, result);
    }
    return result.body as Schedule;
  }

  /** The newest `limit` fires. */
  async runs(id: string, limit: number): Promise<{ runs: ScheduleRun[]; meta: PageMeta }> {
    const result = await this.call(
      'GET',
      `/schedules/${encodeURIComponent(id)}/runs${queryString({ limit, sort_by: 'created_at', sort_order: 'desc' })}`,
    );
    this.expectFound(id, result);
    if (result.status !== 200) {
      throw this.failure(`Could not read the fires of schedule '${id}'`, result);
    }
    return { runs: result.body.data as ScheduleRun[], meta: result.body.meta as PageMeta };
  }

  /** Queues a fire now (202); a disabled schedule is a 409. */
  async trigger(id: string): Promise<ScheduleRun> {
    const result = await this.call('POST', `/schedules/${encodeURIComponent(id)}/trigger`);
    this.expectFound(id, result);
    if (result.status === 409) {
      throw this.failure(`Could not trigger schedule '${id}'`, result, `Resume it first: svc schedules resume ${id}`);
    }
    if (result.status !== 202) {
      throw this.failure(`Could not trigger schedule '${id}'`, result);
    }
    return result.body as ScheduleRun;
  }

  async update(id: string, body: Record<string, unknown>): Promise<Schedule> {
    const result = await this.call('PATCH', `/schedules/${encodeURIComponent(id)}`, body);
    this.expectFound(id, result);
    if (result.status !== 200) {
      throw this.failure(`Could not update schedule '${id}'`, result);
    }
    return result.body as Schedule;
  }

  private expectFound(id: string, result: HttpResult): void {
    // A malformed id is a 422 on these routes (schedule_id must be a UUID): the same answer for the operator.
    if (result.status === 404 || (result.status === 422 && JSON.stringify(result.body?.detail ?? '').includes('schedule_id'))) {
      throw new CliError(`No schedule '${id}' found.`, 'List them with: svc schedules list');
    }
  }
}
