import { setTimeout as sleep } from 'node:timers/promises';

import { Command, Option } from 'nest-commander';

import { ComposeAction, composeCommand, findComposeFile, RESTART_PAUSE_MS, runCompose } from '@app/cli-project';
import { Terminal } from '@app/cli-terminal';

import { JsonOptions } from '../options';
import { SvcCommand } from '../svc-command';

interface LifecycleOptions extends JsonOptions {
  file?: string;
  pull?: boolean;
  volumes?: boolean;
  dryRun?: boolean;
}

interface ComposeRun {
  command: string[];
  compose_file: string;
  dry_run: boolean;
}

/** Says (and unless --dry-run runs) one compose command. */
async function compose(action: ComposeAction, composeFile: string, options: LifecycleOptions, terminal: Terminal): Promise<ComposeRun> {
  const command = composeCommand(composeFile, action, options);
  const dryRun = Boolean(options.dryRun);
  terminal.line(`${dryRun ? 'Would run' : 'Running'}: ${command.join(' ')}`);
  if (!dryRun) {
    // The progress line above, then compose's own output streamed (captured in --json mode).
    await runCompose(command, composeFile, terminal.json);
  }
  return { command, compose_file: composeFile, dry_run: dryRun };
}

abstract class LifecycleCommand extends SvcCommand<LifecycleOptions> {
  @Option({ flags: '-f, --file <compose>', description: 'Compose file (default: searched in ./ then ./infra)' })
  parseFile(value: string): string {
    return value;
  }

  @Option({ flags: '--dry-run', description: 'Print the command without running it (short: -dr)' })
  parseDryRun(): boolean {
    return true;
  }
}

@Command({ name: 'up', description: 'Start the compose deployment (docker compose up -d --build)' })
export class UpCommand extends LifecycleCommand {
  protected async execute(_params: string[], options: LifecycleOptions, terminal: Terminal): Promise<number> {
    terminal.document(await compose('up', findComposeFile(process.cwd(), options.file), options, terminal));
    return 0;
  }

  @Option({ flags: '-p, --pull', description: 'Pull images first (--pull always)' })
  parsePull(): boolean {
    return true;
  }
}

@Command({ name: 'down', description: 'Stop the compose deployment (docker compose down)' })
export class DownCommand extends LifecycleCommand {
  protected async execute(_params: string[], options: LifecycleOptions, terminal: Terminal): Promise<number> {
    terminal.document(await compose('down', findComposeFile(process.cwd(), options.file), options, terminal));
    return 0;
  }

  @Option({ flags: '-v, --volumes', description: 'Also remove named volumes' })
  parseVolumes(): boolean {
    return true;
  }
}

@Command({ name: 'restart', description: 'Restart the compose deployment (down, 2 s pause, up)' })
export class RestartCommand extends LifecycleCommand {
  protected async execute(_params: string[], options: LifecycleOptions, terminal: Terminal): Promise<number> {
    const composeFile = findComposeFile(process.cwd(), options.file);
    const down = await compose('down', composeFile, options, terminal);
    if (!options.dryRun) {
      await sleep(RESTART_PAUSE_MS);
    }
    const up = await compose('up', composeFile, options, terminal);
    terminal.document({ down, up, compose_file: composeFile, dry_run: Boolean(options.dryRun) });
    return 0;
  }

  @Option({ flags: '-p, --pull', description: 'Pull images first (--pull always)' })
  parsePull(): boolean {
    return true;
  }
}
