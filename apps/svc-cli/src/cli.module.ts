import { Module } from '@nestjs/common';

import { Output } from '@app/cli-terminal';

import { ConnectCommand } from './commands/connect.command';
import { CreateCommand } from './commands/create.command';
import { DisconnectCommand } from './commands/disconnect.command';
import {
  JobsCancelCommand,
  JobsCommand,
  JobsGetCommand,
  JobsListCommand,
  JobsRequeueCommand,
  JobsStatsCommand,
} from './commands/jobs.command';
import { DownCommand, RestartCommand, UpCommand } from './commands/lifecycle.command';
import {
  SchedulesCommand,
  SchedulesGetCommand,
  SchedulesListCommand,
  SchedulesPauseCommand,
  SchedulesResumeCommand,
  SchedulesRunsCommand,
  SchedulesTriggerCommand,
} from './commands/schedules.command';
import { StatusCommand } from './commands/status.command';
import { TokensCommand, TokensCreateCommand, TokensListCommand, TokensRevokeCommand, TokensRotateCommand } from './commands/tokens.command';
import { UsageErrors } from './usage-errors';

/** The svc CLI's commands; each lives in commands/<name>.command.ts. */
@Module({
  providers: [
    CreateCommand,
    ConnectCommand,
    DisconnectCommand,
    StatusCommand,
    UpCommand,
    DownCommand,
    RestartCommand,
    TokensCommand,
    TokensCreateCommand,
    TokensListCommand,
    TokensRevokeCommand,
    TokensRotateCommand,
    JobsCommand,
    JobsListCommand,
    JobsGetCommand,
    JobsStatsCommand,
    JobsRequeueCommand,
    JobsCancelCommand,
    SchedulesCommand,
    SchedulesListCommand,
    SchedulesGetCommand,
    SchedulesRunsCommand,
    SchedulesTriggerCommand,
    SchedulesPauseCommand,
    SchedulesResumeCommand,
    UsageErrors,
    // The process's streams; a test provides its own to read what a command printed.
    { provide: Output, useFactory: () => new Output() },
  ],
})
export class CliModule {}
