import { join } from 'node:path';

import { CommandTestFactory } from 'nest-commander-testing';

import { Output, OutputStream } from '@app/cli-terminal';

import { CliModule } from '../../apps/svc-cli/src/cli.module';
import { CliRun, cliRun, CliSandbox } from './cli';

/**
 * Runs an svc command in this process (nest-commander's CommandTestFactory on the real CliModule) with
 * its output captured, seeing what runCli's child would: the same environment (HOME, XDG_CONFIG_HOME,
 * PATH and `env`, nothing else), working directory and a stdin that is not a terminal. For command
 * logic; usage errors exit the process, so they are tested with runCli.
 */
export async function runCommand(
  args: string[],
  sandbox: CliSandbox,
  options: { env?: Record<string, string>; cwd?: string } = {},
): Promise<CliRun> {
  const out = capture();
  const err = capture();
  const restore = enter(
    { PATH: process.env.PATH ?? '', HOME: sandbox.home, XDG_CONFIG_HOME: join(sandbox.home, '.config'), ...options.env },
    options.cwd ?? sandbox.cwd,
  );
  try {
    const module = await CommandTestFactory.createTestingCommand(
      { imports: [CliModule] },
      {
        // As main.ts: what escapes a command is reported by message, exit 1.
        serviceErrorHandler: (error: Error) => {
          err.write(`Error: ${error.message}\n`);
          process.exitCode = 1;
        },
      },
    )
      .overrideProvider(Output)
      .useValue(new Output(out, err, { isTTY: false }))
      .compile();
    process.exitCode = undefined;
    await CommandTestFactory.run(module, args);
    return cliRun(Number(process.exitCode ?? 0), out.text, err.text);
  } finally {
    process.exitCode = undefined;
    restore();
  }
}

function capture(): OutputStream & { text: string } {
  return {
    text: '',
    isTTY: false,
    write(chunk: string) {
      this.text += chunk;
      return true;
    },
  };
}

/** Makes `env` the whole environment and `cwd` the working directory; returns what puts them back. */
function enter(env: Record<string, string>, cwd: string): () => void {
  const saved = { ...process.env };
  const savedCwd = process.cwd();
  const replace = (next: Record<string, string | undefined>) => {
    // Changed in place: os.homedir() and child processes read the real environment, not a new object.
    // The test runner's own VITEST_* settings stay: its worker reads them.
    for (const key of Object.keys(process.env)) {
      if (!key.startsWith('VITEST')) {
        delete process.env[key];
      }
    }
    Object.assign(process.env, next);
  };
  replace(env);
  process.chdir(cwd);
  return () => {
    replace(saved);
    process.chdir(savedCwd);
  };
}
