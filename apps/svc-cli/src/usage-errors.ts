import { Injectable, OnApplicationBootstrap } from '@nestjs/common';
import { InjectCommander } from 'nest-commander';

interface CommanderCommand {
  commands: readonly CommanderCommand[];
  exitOverride(handler: (error: { exitCode: number }) => never): unknown;
}

/**
 * Usage and parse errors exit 2 on stderr with no JSON (help exits 0), on every command and
 * subcommand; nest-commander's own errorHandler reaches the root command only.
 */
@Injectable()
export class UsageErrors implements OnApplicationBootstrap {
  constructor(@InjectCommander() private readonly root: CommanderCommand) {}

  onApplicationBootstrap(): void {
    const override = (command: CommanderCommand): void => {
      command.exitOverride((error) => process.exit(error.exitCode === 0 ? 0 : 2));
      command.commands.forEach(override);
    };
    override(this.root);
  }
}
