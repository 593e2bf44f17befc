import { Injectable, OnApplicationBootstrap } from '@nestjs/common';
import { InjectCommander } from 'nest-commander';

import { Output } from '@app/cli-terminal';

interface CommanderCommand {
  commands: readonly CommanderCommand[];
  exitOverride(handler: (error: { exitCode: number }) => never): unknown;
  allowExcessArguments(allow: boolean): unknown;
  allowUnknownOption(allow: boolean): unknown;
  configureOutput(output: { writeOut(text: string): void; writeErr(text: string): void }): unknown;
  showHelpAfterError(message: string): unknown;
}

/**
 * Usage and parse errors exit 2 on stderr with no JSON (help exits 0), on every command and
 * subcommand; nest-commander's own errorHandler reaches the root command only. Extra positional
 * arguments are usage errors too (commander 11 ignores them by default; a group names them as an unknown command). Help and commander's own
 * messages go to the commands' Output like everything else.
 */
@Injectable()
export class UsageErrors implements OnApplicationBootstrap {
  constructor(
    @InjectCommander() private readonly root: CommanderCommand,
    private readonly output: Output,
  ) {}

  onApplicationBootstrap(): void {
    const streams = {
      writeOut: (text: string) => void this.output.stdout.write(text),
      writeErr: (text: string) => void this.output.stderr.write(text),
    };
    const override = (command: CommanderCommand): void => {
      command.exitOverride((error) => process.exit(error.exitCode === 0 ? 0 : 2));
      // A group's extra argument is an unknown subcommand, which CommandGroup reports; so are the options
      // after it (`svc jobs lst --status failed`): the mistake is the subcommand's name, not the option.
      const group = command !== this.root && command.commands.length > 0;
      command.allowExcessArguments(command.commands.length > 0);
      command.allowUnknownOption(group);
      command.configureOutput(streams);
      command.commands.forEach(override);
    };
    override(this.root);
    // A group's own errors print its commands (CommandGroup); the root's say where the list is.
    this.root.showHelpAfterError('(svc --help lists the commands)');
  }
}

/**
 * A usage error a command finds in its own flags (a combination commander cannot express): reported
 * like commander's, `error: ...` on stderr with no JSON, exit 2, before anything is sent.
 */
export class UsageError extends Error {}
