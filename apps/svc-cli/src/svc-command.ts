import { CommandRunner } from 'nest-commander';

import { Terminal } from '@app/cli-terminal';

import { JsonOptions } from './options';

/**
 * Every svc command: runs its work with a Terminal for the --json flag and turns any failure into the
 * error document (or message) and exit code. Parse errors never get here: they exit 2 in main.ts.
 */
export abstract class SvcCommand<Options extends JsonOptions> extends CommandRunner {
  async run(params: string[], options: Options): Promise<void> {
    const terminal = new Terminal(Boolean(options.json));
    try {
      process.exitCode = await this.execute(params, options, terminal);
    } catch (error) {
      process.exitCode = terminal.failure(error);
    }
  }

  /** Does the work and returns the exit code. */
  protected abstract execute(params: string[], options: Options, terminal: Terminal): Promise<number>;
}
