import { Command, Option, SubCommand } from 'nest-commander';

import { sanitize, Terminal } from '@app/cli-terminal';
import { readCliEnv, resolveAdminCredential, Schedule, ScheduleRun, SCHEDULES_CREDENTIAL_HINT, SchedulesApi } from '@app/svc-client';

import { countUpTo, ServiceOptions } from '../options';
import { targetService } from '../service-target';
import { CommandGroup, CredentialedCommand } from '../svc-command';
import { cell, formatSeconds, formatTime, printFields, printTable, statusColour } from '../table';

async function schedulesApi(options: ServiceOptions, terminal: Terminal): Promise<SchedulesApi> {
  const descriptor = await targetService(options, readCliEnv(), terminal);
  const credential = await resolveAdminCredential(
    descriptor,
    readCliEnv(),
    terminal,
    Boolean(options.allowHttp),
    SCHEDULES_CREDENTIAL_HINT,
  );
  return new SchedulesApi(descriptor.url, credential);
}

function target(schedule: Schedule): string {
  return schedule.target_type === null ? '-' : cell(`${schedule.target_type}:${schedule.target_id}`, 40);
}

function enabled(schedule: Schedule): string {
  return schedule.enabled ? 'yes' : 'no';
}

function printSchedule(schedule: Schedule, terminal: Terminal): void {
  printFields(
    [
      ['ID', schedule.id],
      ['Name', sanitize(schedule.name)],
      ['Call', sanitize(`${schedule.method} ${schedule.endpoint}`)],
      ['Cron', sanitize(schedule.cron_expr)],
      ['Timezone', sanitize(schedule.timezone)],
      ['Enabled', enabled(schedule)],
      ['Disabled reason', cell(schedule.disabled_reason, 500)],
      ['Next run', formatTime(schedule.next_run_at)],
      ['Target', target(schedule)],
      ['User', cell(schedule.user_id, 200)],
      ['Managed by', cell(schedule.managed_by, 200)],
      ['Description', cell(schedule.description, 500)],
      ['Timeout', `${schedule.timeout_seconds}s`],
      ['Retries', `${schedule.max_retries} (every ${schedule.retry_delay_seconds}s)`],
      ...(schedule.overlap_policy === undefined ? [] : ([['Overlap', cell(schedule.overlap_policy)]] as [string, string][])),
      ...(schedule.catchup_policy === undefined
        ? []
        : ([
            [
              'Catch-up',
              `${cell(schedule.catchup_policy)}${schedule.catchup_policy === 'all' ? ` (at most ${schedule.catchup_limit})` : ''}`,
            ],
          ] as [string, string][])),
      ['Payload', schedule.payload === null ? '-' : sanitize(JSON.stringify(schedule.payload))],
      ['Created', formatSeconds(schedule.created_at)],
      ['Updated', formatSeconds(schedule.updated_at)],
    ],
    terminal,
  );
}

function printFire(fire: ScheduleRun, terminal: Terminal): void {
  printFields(
    [
      ['Fire', fire.id],
      ['Schedule', fire.schedule_id],
      ['Trigger', sanitize(fire.trigger)],
      ['Status', sanitize(fire.status)],
      ['Due', formatSeconds(fire.due_at)],
    ],
    terminal,
  );
}

@SubCommand({ name: 'list', description: 'List the schedules this credential may see (GET /schedules)' })
export class SchedulesListCommand extends CredentialedCommand<ServiceOptions> {
  protected async execute(_params: string[], options: ServiceOptions, terminal: Terminal): Promise<number> {
    const api = await schedulesApi(options, terminal);
    const schedules = await api.list();
    terminal.document({ schedules });
    if (!terminal.json) {
      if (schedules.length === 0) {
        terminal.line('No schedules.');
      } else {
        const rows = schedules.map((schedule) => [
          schedule.id,
          cell(schedule.name, 40),
          cell(schedule.cron_expr, 30),
          cell(schedule.timezone, 30),
          enabled(schedule),
          formatTime(schedule.next_run_at),
          target(schedule),
        ]);
        const paint = (text: string, column: number): string =>
          column !== 4 ? text : text.trim() === 'yes' ? terminal.color.green(text) : terminal.color.yellow(text);
        printTable(['ID', 'Name', 'Cron', 'Timezone', 'Enabled', 'Next run', 'Target'], rows, terminal, { paint });
      }
    }
    return 0;
  }
}

@SubCommand({ name: 'get', arguments: '<id>', description: 'Show one schedule, by id or name (GET /schedules/{id})' })
export class SchedulesGetCommand extends CredentialedCommand<ServiceOptions> {
  protected async execute([reference]: string[], options: ServiceOptions, terminal: Terminal): Promise<number> {
    const api = await schedulesApi(options, terminal);
    const schedule = await api.get(await api.idOf(reference));
    terminal.document({ schedule });
    if (!terminal.json) {
      printSchedule(schedule, terminal);
    }
    return 0;
  }
}

interface RunsOptions extends ServiceOptions {
  limit?: number;
}

@SubCommand({ name: 'runs', arguments: '<id>', description: 'The fire history of a schedule, newest first (GET /schedules/{id}/runs)' })
export class SchedulesRunsCommand extends CredentialedCommand<RunsOptions> {
  protected async execute([reference]: string[], options: RunsOptions, terminal: Terminal): Promise<number> {
    const api = await schedulesApi(options, terminal);
    const { runs, meta } = await api.runs(await api.idOf(reference), options.limit ?? 20);
    terminal.document({ runs, meta });
    if (terminal.json) {
      return 0;
    }
    if (runs.length === 0) {
      terminal.line('No fires yet.');
      return 0;
    }
    const rows = runs.map((fire) => [
      fire.id,
      cell(fire.trigger, 10),
      fire.reason ? `${cell(fire.status, 10)} (${cell(fire.reason, 12)})` : cell(fire.status, 10),
      formatSeconds(fire.due_at),
      fire.status_code === null ? '-' : String(fire.status_code),
      String(fire.attempts.length),
      fire.run_id === null ? '-' : `${fire.run_id}${fire.run_status ? ` (${cell(fire.run_status, 12)})` : ''}`,
      cell(fire.error, 50),
    ]);
    printTable(['ID', 'Trigger', 'Status', 'Due', 'Code', 'Attempts', 'Run', 'Error'], rows, terminal, {
      paint: (text, column) => (column === 2 ? statusColour(terminal, text.split(' ')[0])(text) : text),
      // The run's id is what `svc jobs get` takes.
      whole: [6],
    });
    if (meta.total_count > runs.length) {
      terminal.note(`Showing ${runs.length} of ${meta.total_count}; raise --limit to see more.`);
    }
    return 0;
  }

  @Option({ flags: '--limit <n>', description: 'Fires shown at most, 1 to 1000 (default 20)' })
  parseLimit(value: string): number {
    return countUpTo(value, 1000);
  }
}

@SubCommand({
  name: 'trigger',
  arguments: '<id>',
  description: 'Fire a schedule now (POST /schedules/{id}/trigger): prints the queued fire',
})
export class SchedulesTriggerCommand extends CredentialedCommand<ServiceOptions> {
  protected async execute([reference]: string[], options: ServiceOptions, terminal: Terminal): Promise<number> {
    const api = await schedulesApi(options, terminal);
    const fire = await api.trigger(await api.idOf(reference));
    terminal.document({ run: fire });
    if (!terminal.json) {
      // The schedule's overlap policy may drop the fire at once (its previous one is still in flight).
      terminal.line(
        fire.status === 'skipped'
          ? `Not fired: schedule ${fire.schedule_id}'s overlap policy skipped it (${fire.reason ?? fire.error}).`
          : `Queued a fire of schedule ${fire.schedule_id}; a worker runs it next. Follow it with: svc schedules runs ${fire.schedule_id}`,
      );
      printFire(fire, terminal);
    }
    return 0;
  }
}

interface PauseOptions extends ServiceOptions {
  reason?: string;
}

@SubCommand({ name: 'pause', arguments: '<id>', description: 'Pause a schedule: it stops firing until resumed (PATCH enabled: false)' })
export class SchedulesPauseCommand extends CredentialedCommand<PauseOptions> {
  protected async execute([reference]: string[], options: PauseOptions, terminal: Terminal): Promise<number> {
    const api = await schedulesApi(options, terminal);
    const schedule = await api.update(await api.idOf(reference), { enabled: false, disabled_reason: options.reason });
    // A service that does not take disabled_reason drops it silently: say so rather than imply it was kept.
    const warning =
      options.reason !== undefined && schedule.disabled_reason !== options.reason
        ? 'The service did not record the reason (it does not accept disabled_reason).'
        : undefined;
    terminal.document(warning ? { schedule, warning } : { schedule });
    terminal.line(
      `Paused schedule '${sanitize(schedule.name)}' (${schedule.id}).${schedule.disabled_reason ? ` Reason: ${sanitize(schedule.disabled_reason)}` : ''}`,
    );
    if (warning) {
      terminal.warn(warning);
    }
    return 0;
  }

  @Option({ flags: '--reason <text>', description: 'Why it is paused (sent as disabled_reason; kept until it is resumed)' })
  parseReason(value: string): string {
    return value;
  }
}

@SubCommand({ name: 'resume', arguments: '<id>', description: 'Resume a paused schedule (PATCH enabled: true; clears disabled_reason)' })
export class SchedulesResumeCommand extends CredentialedCommand<ServiceOptions> {
  protected async execute([reference]: string[], options: ServiceOptions, terminal: Terminal): Promise<number> {
    const api = await schedulesApi(options, terminal);
    const schedule = await api.update(await api.idOf(reference), { enabled: true });
    terminal.document({ schedule });
    terminal.line(`Resumed schedule '${sanitize(schedule.name)}' (${schedule.id}); next run ${formatTime(schedule.next_run_at)}.`);
    return 0;
  }
}

@Command({
  name: 'schedules',
  description:
    'Inspect, trigger, pause and resume schedules (create and change them through the api: POST /schedules, PATCH /schedules/{id}, or MCP)',
  subCommands: [
    SchedulesListCommand,
    SchedulesGetCommand,
    SchedulesRunsCommand,
    SchedulesTriggerCommand,
    SchedulesPauseCommand,
    SchedulesResumeCommand,
  ],
})
export class SchedulesCommand extends CommandGroup {}
