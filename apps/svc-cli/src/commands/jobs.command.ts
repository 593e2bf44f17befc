import { Command, Option, SubCommand } from 'nest-commander';

import { CliError, sanitize, Terminal } from '@app/cli-terminal';
import {
  BulkAction,
  BulkJobsRequest,
  BulkResult,
  CANCELLABLE_STATUSES,
  COMPONENT_SCAN_MAX,
  Job,
  JOB_STATUSES,
  JobFilter,
  JobStatus,
  QUEUE_CREDENTIAL_HINT,
  QueueApi,
  QueueStats,
  readCliEnv,
  REQUEUEABLE_STATUSES,
  resolveAdminCredential,
} from '@app/svc-client';

import { parseSince as sinceSeconds } from '../durations';
import { collect, countUpTo, oneOf, ServiceOptions } from '../options';
import { targetService } from '../service-target';
import { CommandGroup, CredentialedCommand } from '../svc-command';
import { cell, formatSeconds, formatTime, printFields, printTable, statusColour } from '../table';
import { UsageError } from '../usage-errors';

/** A requeue refused because the job failed within the lock grace, as the CLI says it. */
const LOCK_GRACE_HINT = 'A job that failed within the lock grace may still be running on its worker: retry later, or pass --force.';
/** Requeued without --clear-cancellation, a cancelled job whose cancel still stands is cancelled again when it starts. */
const STILL_CANCELLED_NOTE =
  'A cancelled job is requeued with its cancellation: unless that has lapsed, the new attempt is cancelled again at its first checkpoint. Requeue with --clear-cancellation to run it.';

/** The most jobs one command reads or changes: the bulk endpoint's own bound. */
const LIMIT_MAX = 10_000;
/** Jobs named by id go to the bulk cancel this many at a time: the api lists at most 100 of the jobs it leaves. */
const CANCEL_CHUNK = 100;

/** Why a job named by id was not cancelled, as svc says it. */
function cancelRefusal(id: string, reason: string): string {
  if (reason === 'gone') {
    return `No queue job '${id}' found.`;
  }
  const status = reason.startsWith('status:') ? reason.slice('status:'.length) : null;
  return status ? `Job ${id} is ${status}; only queued and paused jobs can be cancelled` : `Job ${id} ${SKIP_REASONS[reason] ?? reason}`;
}

async function queueApi(options: ServiceOptions, terminal: Terminal): Promise<QueueApi> {
  const descriptor = await targetService(options, readCliEnv(), terminal);
  const credential = await resolveAdminCredential(descriptor, readCliEnv(), terminal, Boolean(options.allowHttp), QUEUE_CREDENTIAL_HINT);
  return new QueueApi(descriptor.url, credential);
}

function component(job: Job): string {
  return `${job.component_type}:${job.component_id}`;
}

function age(seconds: number): string {
  if (seconds < 120) {
    return `${seconds}s`;
  }
  if (seconds < 7_200) {
    return `${Math.floor(seconds / 60)}m`;
  }
  if (seconds < 172_800) {
    return `${Math.floor(seconds / 3_600)}h`;
  }
  return `${Math.floor(seconds / 86_400)}d`;
}

/** A due job waiting this long with nothing running most often means no worker is up. */
const NO_WORKER_HINT_SECONDS = 60;

/** The stats' oldest-queued line: queued jobs none of which is due (retries in their backoff, deferred runs) are not "none queued". */
function oldestQueued(stats: QueueStats): string {
  if (stats.oldest_queued_age_seconds !== null) {
    const idle = stats.oldest_queued_age_seconds >= NO_WORKER_HINT_SECONDS && (stats.counts.running ?? 0) === 0;
    return `${age(stats.oldest_queued_age_seconds)} old${idle ? ', and no job is running: is a worker up? (npm start runs one; a deployment runs npm run start:worker)' : ''}`;
  }
  const queued = stats.counts.queued ?? 0;
  return queued === 0
    ? 'none queued'
    : `none due now (${queued} queued: retries in their backoff, or runs waiting for a worker with their component; see svc jobs list --status queued)`;
}

function plural(count: number, noun: string, nouns = `${noun}s`): string {
  return `${count} ${count === 1 ? noun : nouns}`;
}

interface ListOptions extends ServiceOptions {
  status?: JobStatus[];
  component?: string;
  limit?: number;
}

@SubCommand({
  name: 'list',
  description:
    'List queue jobs, newest first (GET /queue/jobs). --component filters here, not in the api: the newest ' +
    `jobs are read page by page (at most ${COMPONENT_SCAN_MAX}) until --limit of them match`,
})
export class JobsListCommand extends CredentialedCommand<ListOptions> {
  protected async execute(_params: string[], options: ListOptions, terminal: Terminal): Promise<number> {
    const api = await queueApi(options, terminal);
    const list = await api.list({ statuses: options.status, componentId: options.component, limit: options.limit ?? 20 });
    terminal.document(list);
    if (terminal.json) {
      return 0;
    }
    if (list.jobs.length === 0) {
      terminal.line('No jobs.');
    } else {
      const rows = list.jobs.map((job) => [
        job.id,
        job.status,
        cell(component(job), 40),
        `${job.attempt}/${job.max_attempts}`,
        formatTime(job.created_at),
        cell(job.error, 50),
      ]);
      printTable(['ID', 'Status', 'Component', 'Attempt', 'Created', 'Error'], rows, terminal, {
        paint: (text, column) => (column === 1 ? statusColour(terminal, text)(text) : text),
      });
    }
    if (options.component) {
      terminal.note(
        `Filtered by component here: ${plural(list.meta.count, 'match', 'matches')} among the newest ${plural(list.meta.scanned, 'job')} read.`,
      );
    }
    if (list.meta.truncated) {
      terminal.note(
        options.component
          ? `More jobs may match: raise --limit${list.meta.scanned >= COMPONENT_SCAN_MAX ? ` (at most ${COMPONENT_SCAN_MAX} jobs are read)` : ''}.`
          : `Showing ${list.meta.count} of ${list.meta.total_count}; raise --limit to see more.`,
      );
    }
    return 0;
  }

  @Option({ flags: '--status <status>', description: `Only jobs in this status (repeatable: ${JOB_STATUSES.join(', ')})` })
  parseStatus(value: string, previous?: JobStatus[]): JobStatus[] {
    return collect(oneOf(value, JOB_STATUSES), previous);
  }

  @Option({ flags: '--component <id>', description: 'Only jobs of this component id (filtered by svc, see above)' })
  parseComponent(value: string): string {
    return value;
  }

  @Option({ flags: '--limit <n>', description: `Jobs shown at most, 1 to ${LIMIT_MAX} (default 20)` })
  parseLimit(value: string): number {
    return countUpTo(value, LIMIT_MAX);
  }
}

@SubCommand({ name: 'get', arguments: '<id>', description: 'Show one queue job (GET /queue/jobs/{id})' })
export class JobsGetCommand extends CredentialedCommand<ServiceOptions> {
  protected async execute([id]: string[], options: ServiceOptions, terminal: Terminal): Promise<number> {
    const api = await queueApi(options, terminal);
    const job = await api.get(id);
    terminal.document({ job });
    if (!terminal.json) {
      printFields(
        [
          ['ID', job.id],
          ['Status', job.status],
          ['Component', sanitize(component(job))],
          ['Session', sanitize(job.session_id)],
          ['User', cell(job.user_id, 200)],
          ['Attempt', `${job.attempt} of ${job.max_attempts}`],
          ['Created', formatSeconds(job.created_at)],
          ['Updated', formatSeconds(job.updated_at)],
          ['Completed', formatSeconds(job.completed_at)],
          ['Available', formatSeconds(job.available_at)],
          ['Locked by', cell(job.locked_by, 200)],
          ['Idempotency key', cell(job.idempotency_key, 200)],
          // A job requeued or retried keeps the error of its last attempt while it waits or runs again.
          [job.status === 'failed' || job.status === 'cancelled' ? 'Error' : 'Last error', job.error === null ? '-' : sanitize(job.error)],
          ['Payload', sanitize(JSON.stringify(job.payload))],
        ],
        terminal,
      );
    }
    return 0;
  }
}

@SubCommand({ name: 'stats', description: 'Job counts by status and the age of the oldest queued job (GET /queue/stats)' })
export class JobsStatsCommand extends CredentialedCommand<ServiceOptions> {
  protected async execute(_params: string[], options: ServiceOptions, terminal: Terminal): Promise<number> {
    const api = await queueApi(options, terminal);
    const stats = await api.stats();
    terminal.document(stats);
    if (!terminal.json) {
      const statuses = [
        ...JOB_STATUSES,
        ...Object.keys(stats.counts).filter((status) => !(JOB_STATUSES as readonly string[]).includes(status)),
      ];
      const rows = statuses.map((status) => [sanitize(status), String(stats.counts[status as keyof typeof stats.counts] ?? 0)]);
      printTable(['Status', 'Jobs'], rows, terminal, {
        paint: (text, column) => (column === 0 ? statusColour(terminal, text)(text) : text),
      });
      terminal.line('');
      terminal.line(`Oldest queued job: ${oldestQueued(stats)}`);
    }
    return 0;
  }
}

interface BulkOptions extends ServiceOptions {
  status?: JobStatus[];
  component?: string;
  errorContains?: string;
  since?: number;
  limit?: number;
  dryRun?: boolean;
}

interface RequeueOptions extends BulkOptions {
  force?: boolean;
  clearCancellation?: boolean;
}

/** How each bulk action reads in what svc prints. */
const WORDS: Record<BulkAction, { verb: string; done: string; statuses: readonly JobStatus[] }> = {
  requeue: { verb: 'requeue', done: 'Requeued', statuses: REQUEUEABLE_STATUSES },
  cancel: { verb: 'cancel', done: 'Cancelled', statuses: CANCELLABLE_STATUSES },
};

const SKIP_REASONS: Record<string, string> = {
  lock_grace: 'failed within the lock grace; --force requeues them',
  moved: 'changed meanwhile',
};

/**
 * Whether a bulk command names its jobs by id (true) or selects them by filter (false); refuses what does not
 * mix, and a bulk change without a terminal to confirm on unless --yes or --dry-run says what to do.
 */
function byIds(action: BulkAction, ids: string[], options: BulkOptions, terminal: Terminal): boolean {
  const filtering = (['status', 'component', 'errorContains', 'since', 'limit', 'dryRun'] as const).filter(
    (key) => options[key] !== undefined,
  );
  if (ids.length > 0) {
    if (filtering.length > 0) {
      throw new UsageError(
        'job ids and --status, --component, --error-contains, --since, --limit or --dry-run do not mix: name jobs, or select them by filter',
      );
    }
    return true;
  }
  if (!options.status?.length) {
    throw new UsageError(
      `name the jobs to ${action} (svc jobs ${action} <id>...) or select them with --status ${WORDS[action].statuses.join('|')}`,
    );
  }
  if (!options.dryRun && !options.yes && !terminal.interactive) {
    throw new UsageError(
      `a bulk ${action} without a terminal to confirm on (or with --json) changes jobs only with --yes; pass --dry-run to see what it would change`,
    );
  }
  return false;
}

/**
 * A bulk change by filter, among the jobs that exist when the command starts: a dry run counts them first;
 * --dry-run stops there, a terminal asks (default no), --yes goes on.
 */
async function bulkByFilter(
  action: BulkAction,
  options: BulkOptions,
  extra: Partial<BulkJobsRequest>,
  terminal: Terminal,
): Promise<number> {
  const now = Math.floor(Date.now() / 1000);
  // Pinned to the jobs that exist now: jobs created after the count is shown are not part of what is confirmed.
  const filter: JobFilter = { status: options.status, created_before: now + 1 };
  if (options.component !== undefined) {
    filter.component_id = options.component;
  }
  if (options.errorContains !== undefined) {
    filter.error_contains = options.errorContains;
  }
  if (options.since !== undefined) {
    filter.created_after = Math.max(0, now - options.since);
  }
  const request = { filter, ...(options.limit !== undefined ? { limit: options.limit } : {}), ...extra };
  const { verb, done: doneWord } = WORDS[action];
  const api = await queueApi(options, terminal);
  const described = describeFilter(filter, options.limit);
  const dry = await api.bulk(action, { ...request, dry_run: true });
  const requeuesCancelled = action === 'requeue' && filter.status!.includes('cancelled') && !extra.clear_cancellation;
  const explainAll = (result: BulkResult): void => {
    explain(result, options.limit, terminal);
    if (requeuesCancelled && result.changed > 0) {
      terminal.note(STILL_CANCELLED_NOTE);
    }
  };
  if (options.dryRun) {
    terminal.document(dry);
    terminal.line(`Would ${verb} ${plural(dry.changed, 'job')} of ${dry.matched} matched (${described}); dry run, nothing changed.`);
    explainAll(dry);
    return 0;
  }
  if (dry.changed === 0 && !terminal.json) {
    terminal.line(`Nothing to ${verb}: ${plural(dry.matched, 'job')} matched (${described}), none can be ${doneWord.toLowerCase()} now.`);
    explain(dry, options.limit, terminal);
    return 0;
  }
  if (terminal.interactive && !options.yes) {
    terminal.line(`${plural(dry.changed, 'job')} would be ${doneWord.toLowerCase()} of ${dry.matched} matched (${described}).`);
    explainAll(dry);
    if (!(await terminal.confirm(`${verb[0].toUpperCase()}${verb.slice(1)} ${plural(dry.changed, 'job')}?`, false))) {
      terminal.line('Aborted; no changes made.');
      return 0;
    }
  }
  const done = await api.bulk(action, { ...request, dry_run: false });
  terminal.document(done);
  terminal.line(`${doneWord} ${plural(done.changed, 'job')} of ${done.matched} matched (${described}).`);
  explainAll(done);
  return 0;
}

function describeFilter(filter: JobFilter, limit: number | undefined): string {
  const parts = [`status ${filter.status!.join(' or ')}`];
  if (filter.component_id !== undefined) {
    parts.push(`component ${sanitize(filter.component_id)}`);
  }
  if (filter.error_contains !== undefined) {
    parts.push(`error containing "${sanitize(filter.error_contains)}"`);
  }
  if (filter.created_after !== undefined) {
    parts.push(`created since ${formatTime(filter.created_after)}`);
  }
  if (limit !== undefined) {
    parts.push(`oldest ${limit} at most`);
  }
  return parts.join(', ');
}

/** Why jobs were skipped, counted by reason, and whether the limit may have cut the selection short. */
function explain(result: BulkResult, limit = 1000, terminal: Terminal): void {
  const skipped = result.matched - result.changed;
  if (skipped > 0) {
    const reasons = new Map<string, number>();
    result.skipped.forEach((skip) => reasons.set(skip.reason, (reasons.get(skip.reason) ?? 0) + 1));
    const listed = [...reasons].map(
      ([reason, count]) => `${count} ${sanitize(reason)}${SKIP_REASONS[reason] ? ` (${SKIP_REASONS[reason]})` : ''}`,
    );
    terminal.line(
      `Skipped ${skipped}${listed.length ? `: ${listed.join(', ')}` : ''}${result.skipped.length < skipped ? ` (the first ${result.skipped.length} shown)` : ''}.`,
    );
  }
  if (result.matched >= limit) {
    terminal.note(`The limit (${limit}) was reached: more jobs may match. Run it again, or raise --limit (at most ${LIMIT_MAX}).`);
  }
}

/** The selection flags both bulk commands take; each declares its own --status (what it applies to differs). */
abstract class BulkJobsCommand<Options extends BulkOptions> extends CredentialedCommand<Options> {
  @Option({ flags: '--component <id>', description: 'Bulk: only jobs of this component id' })
  parseComponent(value: string): string {
    return value;
  }

  @Option({
    flags: '--error-contains <text>',
    description: "Bulk: only jobs whose error holds this text (any case), such as a dependency's name",
  })
  parseErrorContains(value: string): string {
    return value;
  }

  @Option({ flags: '--since <duration>', description: "Bulk: only jobs created in the last '30s', '15m', '1h', '2d' or N seconds" })
  parseSince(value: string): number {
    return sinceSeconds(value);
  }

  @Option({ flags: '--limit <n>', description: `Bulk: jobs selected at most, oldest first, 1 to ${LIMIT_MAX} (the api's default: 1000)` })
  parseLimit(value: string): number {
    return countUpTo(value, LIMIT_MAX);
  }

  @Option({ flags: '--dry-run', description: 'Bulk: only show what would change' })
  parseDryRun(): boolean {
    return true;
  }

  @Option({
    flags: '-y, --yes',
    description: 'Bulk: change without asking (required without a terminal or with --json); trust a remote SERVICE_URL from a .env file',
  })
  override parseYes(): boolean {
    return true;
  }
}

@SubCommand({
  name: 'requeue',
  arguments: '[ids...]',
  description:
    'Requeue failed or cancelled jobs (one more attempt each): the jobs named by id, or with no ids every job ' +
    '--status (and the Bulk flags) selects, through the bulk endpoint: a dry run counts them first, then a ' +
    'terminal asks (default no); without one, --yes or --dry-run is required. Exit 3 when only some named jobs were requeued',
})
export class JobsRequeueCommand extends BulkJobsCommand<RequeueOptions> {
  protected async execute(ids: string[], options: RequeueOptions, terminal: Terminal): Promise<number> {
    if (byIds('requeue', ids, options, terminal)) {
      return this.requeueByIds([...new Set(ids)], options, terminal);
    }
    return bulkByFilter(
      'requeue',
      options,
      { ...(options.force ? { force: true } : {}), ...(options.clearCancellation ? { clear_cancellation: true } : {}) },
      terminal,
    );
  }

  private async requeueByIds(ids: string[], options: RequeueOptions, terminal: Terminal): Promise<number> {
    const api = await queueApi(options, terminal);
    const requeued: Job[] = [];
    const failed: { id: string; error: string; hint?: string }[] = [];
    let requeuedCancelled = false;
    for (const id of ids) {
      const wasCancelled = !options.clearCancellation && (await api.find(id))?.status === 'cancelled';
      const outcome = await api.requeue(id, { force: options.force, clearCancellation: options.clearCancellation });
      if ('job' in outcome) {
        requeued.push(outcome.job);
        requeuedCancelled ||= wasCancelled;
        terminal.line(
          `Requeued ${outcome.job.id} (${sanitize(component(outcome.job))}; ${outcome.job.attempt} of ${outcome.job.max_attempts} attempts used).`,
        );
      } else {
        // The api's detail names its query flag; the hint says the CLI's, in the JSON document too.
        const withinGrace = !options.force && outcome.error.includes('force=true');
        failed.push({ id, error: outcome.error, ...(withinGrace ? { hint: LOCK_GRACE_HINT } : {}) });
        if (!terminal.json) {
          // At a terminal the api's advice in its own terms goes: the note below says it in the CLI's.
          const said = withinGrace
            ? outcome.error.replace(/ Retry after the lock grace elapses, or pass force=true to override\.$/, '')
            : outcome.error;
          terminal.failure(new CliError(`Could not requeue ${id}: ${said}`));
        }
      }
    }
    terminal.document({ requeued, failed });
    if (failed.some((failure) => failure.hint)) {
      terminal.note(LOCK_GRACE_HINT);
    }
    if (requeuedCancelled) {
      terminal.note(STILL_CANCELLED_NOTE);
    }
    return failed.length === 0 ? 0 : requeued.length === 0 ? 1 : 3;
  }

  @Option({ flags: '--status <status>', description: `Bulk: jobs in this status (repeatable: ${REQUEUEABLE_STATUSES.join(', ')})` })
  parseStatus(value: string, previous?: JobStatus[]): JobStatus[] {
    return collect<JobStatus>(oneOf(value, REQUEUEABLE_STATUSES), previous);
  }

  @Option({ flags: '--force', description: 'Also requeue jobs that failed within the lock grace (their worker may still be running them)' })
  parseForce(): boolean {
    return true;
  }

  @Option({ flags: '--clear-cancellation', description: 'Clear the recorded cancellation of cancelled jobs (needed while it is live)' })
  parseClearCancellation(): boolean {
    return true;
  }
}

@SubCommand({
  name: 'cancel',
  arguments: '[ids...]',
  description:
    'Cancel queued or paused jobs, so no worker runs them (their runs end cancelled): the jobs named by id, or with ' +
    'no ids every job --status (and the Bulk flags) selects, through the bulk endpoint, confirmed as requeue ' +
    'is. A running job is not touched. Exit 3 when only some named jobs were cancelled',
})
export class JobsCancelCommand extends BulkJobsCommand<BulkOptions> {
  protected async execute(ids: string[], options: BulkOptions, terminal: Terminal): Promise<number> {
    return byIds('cancel', ids, options, terminal)
      ? this.cancelByIds([...new Set(ids)], options, terminal)
      : bulkByFilter('cancel', options, {}, terminal);
  }

  /**
   * Each job is read first (an unknown id is named as such, and ids are taken as the api spells them), then the
   * known ones are cancelled through the bulk route, at most CANCEL_CHUNK a request so that every job it leaves is
   * listed with its reason. A job is reported cancelled only when the answer accounts for it, or, when the counts do
   * not add up (a job deleted meanwhile), when reading it again shows it cancelled.
   */
  private async cancelByIds(ids: string[], options: BulkOptions, terminal: Terminal): Promise<number> {
    const api = await queueApi(options, terminal);
    // Each id as named, to the job it names (null: the api has none; it answers 404 to anything not a job id).
    const named = new Map<string, Job | null>();
    for (const id of ids) {
      named.set(id, await api.find(id));
    }
    const known = [...new Set([...named.values()].flatMap((job) => (job ? [job.id] : [])))];
    // Why each known job was left, or null when it was cancelled.
    const reasons = new Map<string, string | null>();
    for (let start = 0; start < known.length; start += CANCEL_CHUNK) {
      const chunk = known.slice(start, start + CANCEL_CHUNK);
      const result = await api.bulk('cancel', { filter: { ids: chunk }, limit: chunk.length, dry_run: false });
      result.skipped.forEach((skip) => reasons.set(skip.id, skip.reason));
      const accounted = result.matched === chunk.length && result.changed === chunk.length - result.skipped.length;
      for (const id of chunk.filter((jobId) => !reasons.has(jobId))) {
        const now = accounted ? null : await api.find(id);
        reasons.set(id, accounted || now?.status === 'cancelled' ? null : now ? `status:${now.status}` : 'gone');
      }
    }
    const cancelled: string[] = [];
    const failed: { id: string; error: string }[] = [];
    for (const [id, job] of named) {
      const reason = job ? reasons.get(job.id)! : 'gone';
      if (reason !== null) {
        failed.push({ id, error: cancelRefusal(id, reason) });
      } else if (!cancelled.includes(job!.id)) {
        cancelled.push(job!.id);
        terminal.line(`Cancelled ${job!.id} (${sanitize(component(job!))}).`);
      }
    }
    terminal.document({ cancelled, failed });
    if (!terminal.json) {
      failed.forEach((failure) => terminal.failure(new CliError(`Could not cancel ${failure.id}: ${failure.error}`)));
    }
    if (failed.some((failure) => failure.error.includes(' is running;'))) {
      terminal.note(
        'A running job stops when its run is cancelled (POST /agents/{agent_id}/runs/{run_id}/cancel): it ends at its next checkpoint.',
      );
    }
    return failed.length === 0 ? 0 : cancelled.length === 0 ? 1 : 3;
  }

  @Option({ flags: '--status <status>', description: `Bulk: jobs in this status (repeatable: ${CANCELLABLE_STATUSES.join(', ')})` })
  parseStatus(value: string, previous?: JobStatus[]): JobStatus[] {
    return collect<JobStatus>(oneOf(value, CANCELLABLE_STATUSES), previous);
  }
}

@Command({
  name: 'jobs',
  description: 'Inspect the durable job queue, requeue failed jobs and cancel queued ones (needs platform:admin)',
  subCommands: [JobsListCommand, JobsGetCommand, JobsStatsCommand, JobsRequeueCommand, JobsCancelCommand],
})
export class JobsCommand extends CommandGroup {}
