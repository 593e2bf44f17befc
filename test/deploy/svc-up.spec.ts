import { dirname, resolve } from 'node:path';

import { describe, expect, it } from 'vitest';

import { cliSandbox, runCli } from '../support/cli';

interface ComposeRun {
  command: string[];
  compose_file: string;
  dry_run: boolean;
}

const COMPOSE_FILE = resolve('docker/compose.yaml');
// Only node's own directory on PATH: were svc to call docker, it could not.
const NO_DOCKER = { PATH: dirname(process.execPath) };

/** The real `svc` binary on the compose file this repository ships. */
async function dryRun(args: string[], cwd: string): Promise<ComposeRun> {
  const run = await runCli([...args, '--dry-run', '--json'], cliSandbox(), { cwd, env: NO_DOCKER });
  expect(run.code, run.stderr).toBe(0);
  return run.json<ComposeRun>();
}

describe('svc up with the shipped docker/compose.yaml', () => {
  it('`svc up --dry-run -f docker/compose.yaml --json` names the compose up command and runs nothing', async () => {
    expect(await dryRun(['up', '-f', 'docker/compose.yaml'], process.cwd())).toEqual({
      command: ['docker', 'compose', '-f', COMPOSE_FILE, 'up', '-d', '--build'],
      compose_file: COMPOSE_FILE,
      dry_run: true,
    });
  });

  it('adds --pull always with --pull, and tears down with the volume on down --volumes', async () => {
    expect((await dryRun(['up', '--pull', '-f', 'docker/compose.yaml'], process.cwd())).command).toEqual([
      'docker',
      'compose',
      '-f',
      COMPOSE_FILE,
      'up',
      '-d',
      '--build',
      '--pull',
      'always',
    ]);
    expect((await dryRun(['down', '--volumes', '-f', 'docker/compose.yaml'], process.cwd())).command).toEqual([
      'docker',
      'compose',
      '-f',
      COMPOSE_FILE,
      'down',
      '--volumes',
    ]);
  });

  it('finds docker/compose.yaml without -f when run in docker/', async () => {
    expect(await dryRun(['up'], resolve('docker'))).toMatchObject({ compose_file: COMPOSE_FILE, dry_run: true });
  });
});
