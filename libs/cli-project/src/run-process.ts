import { spawn } from 'node:child_process';

import { CliError } from '@app/cli-terminal';

/**
 * The CLI's own credentials (see readCliEnv): no child needs them, and Compose lets a shell variable
 * override the project's .env, so an OS_SECURITY_KEY exported for another instance would replace this one's.
 */
const CLI_CREDENTIALS = ['SVC_ADMIN_TOKEN', 'OS_SECURITY_KEY'];

/** This process's environment plus `extra`, without the CLI's credentials. */
function childEnvironment(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env = { ...process.env, ...extra };
  for (const name of CLI_CREDENTIALS) {
    delete env[name];
  }
  return env;
}

export interface ProcessOutcome {
  code: number;
  stderr: string;
}

/**
 * Runs a program with an argv array (never a shell), killing it after the timeout, with this process's
 * environment plus `env`, less the CLI's credentials. Output is captured (and stderr returned) when `capture`, else streamed to this terminal.
 */
export function runProcess(
  command: string,
  args: string[],
  options: { cwd?: string; env?: Record<string, string>; timeoutMs: number; capture: boolean; missing: string },
): Promise<ProcessOutcome> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, {
      cwd: options.cwd,
      env: childEnvironment(options.env),
      stdio: options.capture ? ['ignore', 'pipe', 'pipe'] : ['ignore', 'inherit', 'inherit'],
    });
    let stderr = '';
    child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.stdout?.resume();
    const timer = setTimeout(() => {
      child.kill('SIGTERM');
      reject(new CliError(`${command} ${args[0] ?? ''} did not finish within ${options.timeoutMs / 1000} s and was stopped.`));
    }, options.timeoutMs);
    child.on('error', (error: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      reject(error.code === 'ENOENT' ? new CliError(options.missing) : new CliError(`Could not run ${command}: ${error.message}`));
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code: code ?? (signal ? 128 : 1), stderr: stderr.trim() });
    });
  });
}
