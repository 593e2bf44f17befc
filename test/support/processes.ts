import { ChildProcess, spawn } from 'node:child_process';

import { testPort } from './ports';
import { TcpProxy } from './tcp-proxy';

export interface RunningProcess {
  readonly child: ChildProcess;
  /** Everything the process printed so far (stdout and stderr). */
  output(): string;
  /** SIGTERM (or the given signal), then wait for exit. */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
  exited: Promise<number | null>;
}

export interface SpawnOptions {
  /** The working directory (default: this one, the checkout root). */
  cwd?: string;
  /** A process group of its own, so a test can signal the group as a terminal's Ctrl-C does. */
  detached?: boolean;
}

/**
 * Every child this test file spawned, with when it lived. A failed test prints what those it overlapped said;
 * and a boot can outlast its hook's timeout, leaving nothing to stop its child: test/support/process-hooks.ts
 * kills those still running after each file.
 */
const spawned: { name: string; process: RunningProcess; detached: boolean; began: number; ended: number | null }[] = [];

/** The last lines of every process alive at some point since `since` (epoch ms), for a failed test's report. */
export function outputsSince(since: number, lines = 40): string[] {
  return spawned
    .filter(({ ended }) => ended === null || ended >= since)
    .map(({ name, process, began }) => {
      const output = process.output().trimEnd();
      const tail = output === '' ? [] : output.split('\n').slice(-lines);
      const heading = `── ${name} (pid ${process.child.pid ?? 'none: it did not start'}, spawned ${new Date(began).toISOString()})`;
      return tail.length === 0
        ? `${heading}: printed nothing`
        : `${heading}, last ${tail.length} lines:\n${tail.map((line) => line.slice(0, 1_000)).join('\n')}`;
    });
}

export function killLeftoverProcesses(): void {
  for (const { process: running, detached } of spawned) {
    const { child } = running;
    if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) {
      continue;
    }
    try {
      // A detached child leads its own process group: the group goes with it.
      process.kill(detached ? -child.pid : child.pid, 'SIGKILL');
    } catch {
      // Gone meanwhile.
    }
  }
}

/** Spawns a built entry point (`dist/...`) with a clean, explicit environment. */
export function spawnNode(script: string, env: Record<string, string>, options: SpawnOptions = {}): RunningProcess {
  return spawnProcess(process.execPath, [script], env, options);
}

/** Spawns any command (the image's shell entry point, say) the same way. */
export function spawnProcess(command: string, args: string[], env: Record<string, string>, options: SpawnOptions = {}): RunningProcess {
  const child = spawn(command, args, {
    env: { PATH: process.env.PATH ?? '', LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    cwd: options.cwd,
    detached: options.detached,
  });
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  // Its last lines can still be in the pipes when it exits: wait for them to close, unless a grandchild holds them open.
  const exited = new Promise<number | null>((resolve) => {
    child.once('exit', (code) => {
      const timer = setTimeout(() => resolve(code), 2_000);
      child.once('close', () => {
        clearTimeout(timer);
        resolve(code);
      });
    });
    // A command that could not start emits no 'exit'.
    child.once('error', () => child.pid === undefined && resolve(null));
  });
  const running: RunningProcess = {
    child,
    output: () => output,
    exited,
    stop: async (signal: NodeJS.Signals = 'SIGTERM') => {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill(signal);
      }
      return exited;
    },
  };
  const entry = {
    name: [command, ...args].join(' '),
    process: running,
    detached: options.detached === true,
    began: Date.now(),
    ended: null as number | null,
  };
  spawned.push(entry);
  void exited.then(() => (entry.ended = Date.now()));
  return running;
}

/** The message of the line a failed boot ends with: a fatal JSON line's `msg` (off a terminal), else the output itself. */
export function bootFailureOf(output: string): string {
  const fatal = output
    .trim()
    .split('\n')
    .flatMap((line) => {
      try {
        const entry = JSON.parse(line) as { level?: number; msg?: string };
        return entry.level === 60 && typeof entry.msg === 'string' ? [entry.msg] : [];
      } catch {
        return [];
      }
    });
  return fatal.at(-1) ?? output;
}

export interface RunningApi extends RunningProcess {
  url: string;
}

/** Whether a process of this machine still runs (or is a zombie not yet reaped). */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

export async function waitFor(check: () => Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check().catch(() => false)) {
      return;
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`Timed out after ${timeoutMs} ms waiting for ${what}`);
}

/** A port free when picked can be taken by another test's process before the api binds it: the api then says so. */
const PORT_TAKEN = /port \d+ on \S+ is already in use/;

/** Starts the built api on a free loopback port and waits until /health answers (on another port if that one was taken meanwhile). */
export async function startApi(env: Record<string, string>): Promise<RunningApi> {
  for (let attempt = 1; ; attempt += 1) {
    const port = await testPort();
    const api = spawnNode('dist/apps/api/src/main.js', { HOST: '127.0.0.1', PORT: String(port), ...env });
    const url = `http://127.0.0.1:${port}`;
    try {
      await Promise.race([
        // Generous: on two cores shared by several test runs a boot alone has taken over 30 s.
        waitFor(async () => (await fetch(`${url}/health`)).ok, 60_000, 'the api to answer /health'),
        api.exited.then((code) => {
          throw new Error(`api exited with ${code} before it was ready:\n${api.output()}`);
        }),
      ]);
      return { ...api, url };
    } catch (error) {
      await api.stop('SIGKILL');
      if (env.PORT !== undefined || attempt === 3 || !PORT_TAKEN.test(api.output())) {
        throw error;
      }
    }
  }
}

/** Starts the built worker and waits until it has booted and its queue loop is up (logged at info level). */
export async function startWorker(env: Record<string, string>): Promise<RunningProcess> {
  const worker = spawnNode('dist/apps/worker/src/main.js', { LOG_LEVEL: 'info', ...env });
  const queueUp = /queue worker started|claims no jobs/;
  try {
    await Promise.race([
      waitFor(async () => queueUp.test(worker.output()) && worker.output().includes('worker ready'), 60_000, 'the worker to boot'),
      worker.exited.then((code) => {
        throw new Error(`worker exited with ${code} before it was ready:\n${worker.output()}`);
      }),
    ]);
  } catch (error) {
    await worker.stop('SIGKILL');
    throw error;
  }
  return worker;
}

export interface ProxiedWorker {
  worker: RunningProcess;
  /** Between the worker and its database: cut or stall it to take the database away. */
  proxy: TcpProxy;
  proxyPort: number;
  /** The worker's health port (WORKER_HEALTH_PORT): /livez, /readyz, /metrics. */
  probes: string;
}

/** A worker that reaches its (migrated) database through a TcpProxy, with its health port open. */
export async function startProxiedWorker(databaseUrl: string, env: Record<string, string>): Promise<ProxiedWorker> {
  const url = new URL(databaseUrl);
  const proxy = new TcpProxy(url.hostname, Number(url.port));
  const proxyPort = await proxy.listen();
  url.port = String(proxyPort);
  const port = await testPort();
  const worker = await startWorker({ DATABASE_URL: url.toString(), DB_MIGRATE: 'false', WORKER_HEALTH_PORT: String(port), ...env });
  return { worker, proxy, proxyPort, probes: `http://127.0.0.1:${port}` };
}
