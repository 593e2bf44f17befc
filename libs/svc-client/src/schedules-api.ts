import { CliError } from '@app/cli-terminal';

import { AdminApi } from './admin-api';
import { Answer, Schemas } from './http';
import { PageMeta } from './queue-api';

/** A schedule as GET /schedules/{id} answers it; services older than the overlap and catch-up policies leave them out. */
export type Schedule = Omit<Schemas['ScheduleDto'], PolicyField> & Partial<Pick<Schemas['ScheduleDto'], PolicyField>>;
type PolicyField = 'overlap_policy' | 'catchup_policy' | 'catchup_limit';
/** One fire of a schedule (GET /schedules/{id}/runs). */
export type ScheduleRun = Schemas['ScheduleRunDto'];

/** What a credential for `svc schedules` needs. */
export const SCHEDULES_CREDENTIAL_HINT =
  'Use SVC_ADMIN_TOKEN with schedules:read (schedules:write to trigger, pause or resume; platform:admin for schedules another principal owns), or OS_SECURITY_KEY.';
const PAGE_SIZE = 100;
/** How a schedule id looks (a UUID); anything else is taken for a name. */
const SCHEDULE_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** The schedules API (/schedules/...). */
export class SchedulesApi extends AdminApi {
  protected readonly credentialHint = SCHEDULES_CREDENTIAL_HINT;

  /** Every schedule the credential may see, oldest first, page by page. */
  async list(): Promise<Schedule[]> {
    return this.allPages(async (page) => {
      const query = { limit: PAGE_SIZE, page, sort_by: 'created_at', sort_order: 'asc' } as const;
      return this.expect(await this.send(this.client.GET('/schedules', { params: { query } })), 200, 'Could not list schedules');
    });
  }

  /**
   * The id of the schedule `reference` names: an id as it is, else the one schedule of that name this credential
   * sees (names are unique per owner, so an admin may see several).
   */
  async idOf(reference: string): Promise<string> {
    if (SCHEDULE_ID.test(reference)) {
      return reference;
    }
    const named = (await this.list()).filter((schedule) => schedule.name === reference);
    if (named.length === 1) {
      return named[0].id;
    }
    if (named.length === 0) {
      throw new CliError(`No schedule '${reference}' found: no schedule has that id or name.`, 'List them with: svc schedules list');
    }
    const owned = named.map((schedule) => `${schedule.id} (owner ${schedule.user_id ?? 'none'})`).join(', ');
    throw new CliError(`${named.length} schedules are named '${reference}': ${owned}.`, 'Give the id of the one you mean.');
  }

  async get(id: string): Promise<Schedule> {
    const answer = await this.send(this.client.GET('/schedules/{schedule_id}', { params: { path: { schedule_id: id } } }));
    return this.expect(this.found(id, answer), 200, `Could not read schedule '${id}'`);
  }

  /** The newest `limit` fires. */
  async runs(id: string, limit: number): Promise<{ runs: ScheduleRun[]; meta: PageMeta }> {
    const params = { path: { schedule_id: id }, query: { limit, sort_by: 'created_at', sort_order: 'desc' } } as const;
    const answer = await this.send(this.client.GET('/schedules/{schedule_id}/runs', { params }));
    const { data, meta } = this.expect(this.found(id, answer), 200, `Could not read the fires of schedule '${id}'`);
    return { runs: data, meta };
  }

  /** Queues a fire now (202); a disabled schedule is a 409. */
  async trigger(id: string): Promise<ScheduleRun> {
    const answer = this.found(
      id,
      await this.send(this.client.POST('/schedules/{schedule_id}/trigger', { params: { path: { schedule_id: id } } })),
    );
    const hint = answer.response.status === 409 ? `Resume it first: svc schedules resume ${id}` : undefined;
    return this.expect(answer, 202, `Could not trigger schedule '${id}'`, hint);
  }

  async update(id: string, body: Schemas['UpdateScheduleDto']): Promise<Schedule> {
    const answer = await this.send(this.client.PATCH('/schedules/{schedule_id}', { params: { path: { schedule_id: id } }, body }));
    return this.expect(this.found(id, answer), 200, `Could not update schedule '${id}'`);
  }

  /** The answer, unless it says there is no such schedule. */
  private found<T extends Answer>(id: string, answer: T): T {
    // A malformed id is a 422 on older services (schedule_id had to be a UUID): the same answer for the operator.
    const { status } = answer.response;
    if (
      status === 404 ||
      (status === 422 && JSON.stringify((answer.error as { detail?: unknown } | undefined)?.detail ?? '').includes('schedule_id'))
    ) {
      throw new CliError(`No schedule '${id}' found.`, 'List them with: svc schedules list');
    }
    return answer;
  }
}
