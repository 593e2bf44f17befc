import { Inject } from '@nestjs/common';
import { CommandRunner, Option } from 'nest-commander';

import { CliError, Output, Terminal } from '@app/cli-terminal';
import { DEFAULT_SCOPES } from '@app/scopes';
import { normalizeBaseUrl } from '@app/svc-client';

import { collectScopes, InvalidOptionValue, JsonOptions, MintOptions, ServiceOptions } from './options';
import { parseExpires as parseExpiresValue } from './scopes';
import { UsageError } from './usage-errors';

// Options declared here are inherited: nest-commander reads @Option methods along the prototype
// chain, and a subclass method of the same name (a different description) replaces them.

/**
 * Every svc command: runs its work with a Terminal for the --json flag and turns any failure into the
 * error document (or message) and exit code. Parse errors never get here: they exit 2 in main.ts;
 * a UsageError thrown by the command exits 2 the same way.
 */
export abstract class SvcCommand<Options extends JsonOptions> extends CommandRunner {
  // A property, not a constructor parameter, so commands with constructors of their own need not pass it on.
  @Inject(Output) private readonly output!: Output;

  async run(params: string[], options: Options): Promise<void> {
    const terminal = new Terminal(Boolean(options.json), this.output);
    try {
      process.exitCode = await this.execute(params, options, terminal);
    } catch (error) {
      if (error instanceof UsageError) {
        this.output.stderr.write(`error: ${error.message}\n`);
        process.exitCode = 2;
        return;
      }
      process.exitCode = terminal.failure(error);
    }
  }

  /** Does the work and returns the exit code. */
  protected abstract execute(params: string[], options: Options, terminal: Terminal): Promise<number>;

  @Option({ flags: '--json', description: 'Print one JSON document' })
  parseJson(): boolean {
    return true;
  }
}

/**
 * A command group (`svc tokens`, `jobs`, `schedules`): alone, or with a subcommand it does not have, a
 * usage error listing the group's commands (exit 2). Commander hands the group the unknown name as an
 * argument (UsageErrors lets groups take them), since nest-commander gives every command an action.
 */
export abstract class CommandGroup extends CommandRunner {
  async run([unknown]: string[]): Promise<void> {
    if (unknown?.startsWith('-')) {
      this.command.error(
        `error: unknown option '${unknown}' (svc ${this.command.name()} takes a command first)\n\n${this.command.helpInformation().trimEnd()}`,
      );
    }
    if (unknown !== undefined) {
      this.command.error(`error: unknown command '${this.command.name()} ${unknown}'\n\n${this.command.helpInformation().trimEnd()}`);
    }
    this.command.outputHelp({ error: true });
    process.exitCode = 2;
  }
}

/** A command that reaches a running service: found by discovery unless --url names it. */
export abstract class ServiceCommand<Options extends ServiceOptions> extends SvcCommand<Options> {
  @Option({ flags: '--url <url>', description: 'Base URL of the service (default: discovered)' })
  parseUrl(value: string): string {
    // A malformed --url is a usage error (exit 2), checked as the flag is read; SERVICE_URL from the
    // environment or a .env is checked later, with the file it came from named.
    try {
      normalizeBaseUrl(value, '--url');
    } catch (error) {
      throw new InvalidOptionValue(`${(error as CliError).message}. ${(error as CliError).hint ?? ''}`.trim());
    }
    return value;
  }
}

/** A command that sends credentials to the service: the plaintext-HTTP guard and the .env trust prompt apply. */
export abstract class CredentialedCommand<Options extends ServiceOptions> extends ServiceCommand<Options> {
  @Option({ flags: '--allow-http', description: 'Permit credentials over plaintext HTTP to a non-loopback host' })
  parseAllowHttp(): boolean {
    return true;
  }

  @Option({ flags: '-y, --yes', description: 'Trust a remote SERVICE_URL from a .env file without prompting' })
  parseYes(): boolean {
    return true;
  }
}

/** A command that mints service-account tokens: what they may do, and for how long. */
export abstract class MintingCommand<Options extends MintOptions> extends CredentialedCommand<Options> {
  @Option({
    flags: '-s, --scopes <scope>',
    description: `Scope to grant (repeatable, or comma-separated; default: ${DEFAULT_SCOPES.join(', ')})`,
  })
  parseScopes(value: string, previous?: string[]): string[] {
    return collectScopes(value, previous);
  }

  @Option({ flags: '--expires <days>', description: "Expiry: days ('90d', '30') or 'never' (default 90d)" })
  parseExpires(value: string): string {
    parseExpiresValue(value);
    return value;
  }

  @Option({
    flags: '--privileged',
    description: 'Allow write, delete, admin and service_accounts scopes (allow_privileged_scopes in the api)',
  })
  parsePrivileged(): boolean {
    return true;
  }
}
