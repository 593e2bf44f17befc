import { existsSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';

import { CliError } from '@app/cli-terminal';

import { runProcess } from './run-process';

/** Searched in this order, in `./` then `./infra`. */
export const COMPOSE_FILE_NAMES = ['docker-compose.yml', 'docker-compose.yaml', 'compose.yml', 'compose.yaml'] as const;
export const COMPOSE_TIMEOUT_MS = 600_000;
export const RESTART_PAUSE_MS = 2_000;

export function findComposeFile(cwd: string, explicit?: string): string {
  if (explicit !== undefined) {
    const path = resolve(cwd, explicit);
    const found = statSync(path, { throwIfNoEntry: false });
    if (!found) {
      throw new CliError(`Compose file not found: ${path}`);
    }
    // `-f ""` resolves to the working directory itself; compose would fail on it only after svc said ok.
    if (!found.isFile()) {
      throw new CliError(`Not a compose file: ${path} is not a file`, 'Pass --file <compose file>, e.g. --file compose.yaml.');
    }
    return path;
  }
  for (const dir of [cwd, join(cwd, 'infra')]) {
    for (const name of COMPOSE_FILE_NAMES) {
      if (existsSync(join(dir, name))) {
        return join(dir, name);
      }
    }
  }
  throw new CliError(
    `No compose file found in ${cwd} or ${join(cwd, 'infra')}.`,
    'Pass --file <compose file>, or run from the project directory.',
  );
}

export type ComposeAction = 'up' | 'down';

/** The full argv of one compose run. */
export function composeCommand(composeFile: string, action: ComposeAction, options: { pull?: boolean; volumes?: boolean }): string[] {
  const args =
    action === 'up'
      ? ['up', '-d', '--build', ...(options.pull ? ['--pull', 'always'] : [])]
      : ['down', ...(options.volumes ? ['--volumes'] : [])];
  return ['docker', 'compose', '-f', composeFile, ...args];
}

/**
 * Runs compose from the compose file's directory; a non-zero exit is an error naming the code. Whether docker has
 * its Compose plugin is asked first: without it docker reads `compose -f` as its own flags and prints its whole
 * usage text before failing, which would bury the one line that says what to install.
 */
export async function runCompose(command: string[], composeFile: string, capture: boolean): Promise<void> {
  if (await composePluginMissing()) {
    throw new CliError(
      'Docker is installed, but its Compose plugin is not (`docker compose` is not a docker command).',
      'Install the plugin: on Debian or Ubuntu `sudo apt-get install docker-compose-plugin`; Docker Desktop includes it. Then re-run.',
    );
  }
  const [program, ...args] = command;
  const outcome = await runProcess(program, args, {
    cwd: dirname(composeFile),
    timeoutMs: COMPOSE_TIMEOUT_MS,
    capture,
    missing: 'docker is required: install Docker (with the compose plugin) and re-run.',
  });
  if (outcome.code !== 0) {
    throw new CliError(`docker compose exited with code ${outcome.code}${outcome.stderr ? `: ${outcome.stderr}` : ''}`);
  }
}

/** `docker compose version` fails and says compose is no docker command; false when docker itself is missing (said by the run). */
async function composePluginMissing(): Promise<boolean> {
  const probe = await runProcess('docker', ['compose', 'version'], {
    timeoutMs: 10_000,
    capture: true,
    missing: 'docker is required',
  }).catch(() => null);
  return probe !== null && probe.code !== 0 && saysComposeIsMissing(probe.stderr);
}

/**
 * Whether docker's stderr says `compose` is not one of its commands, in each docker's words: "'compose' is
 * not a docker command", "unknown command \"compose\"", Docker 28's "unknown command: docker compose", or
 * the flag error of `compose -f` read as docker's own flags.
 */
export function saysComposeIsMissing(stderr: string): boolean {
  return /not a docker command|unknown shorthand flag|unknown command:? "?(docker )?compose/i.test(stderr);
}
