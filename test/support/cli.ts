import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, realpathSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

import { createTestDatabase } from './database';
import { ROOT_KEY } from './principals';
import { RunningApi, RunningProcess, startApi, startWorker } from './processes';

export const SVC_BIN = resolve('bin/svc.js');

/** The localhost ports svc probes when no URL is given. */
export const DEFAULT_PORTS = [7777, 7778, 7779, 8000];

/** The default ports something on this machine listens on: a test of what svc does with none answering skips then. */
export async function defaultPortsInUse(): Promise<number[]> {
  const accepts = (port: number) =>
    new Promise<boolean>((resolve) => {
      const socket = connect({ host: 'localhost', port }, () => (socket.destroy(), resolve(true)));
      socket.on('error', () => resolve(false));
    });
  const listening = await Promise.all(DEFAULT_PORTS.map(accepts));
  return DEFAULT_PORTS.filter((_, index) => listening[index]);
}

export interface CliRun {
  code: number | null;
  stdout: string;
  stderr: string;
  /** stdout parsed as the one JSON document (throws if it is not exactly one). */
  json<T = any>(): T;
}

export interface CliSandbox {
  /** The temporary HOME the CLI sees. */
  home: string;
  /** The temporary working directory it runs in. */
  cwd: string;
}

/** A fresh HOME and working directory under one private temporary directory. */
export function cliSandbox(): CliSandbox {
  const root = realpathSync(mkdtempSync(join(tmpdir(), 'svc-cli-')));
  const home = join(root, 'home');
  const cwd = join(root, 'work');
  mkdirSync(home);
  mkdirSync(cwd);
  return { home, cwd };
}

/**
 * Runs the built `svc` binary as a child process with an explicit environment (nothing leaks in from
 * the test runner's: no SERVICE_URL, no credentials), stdin not a TTY. `bin`: another copy of svc.js.
 */
export function runCli(
  args: string[],
  sandbox: CliSandbox,
  options: { env?: Record<string, string>; cwd?: string; timeoutMs?: number; bin?: string } = {},
): Promise<CliRun> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(process.execPath, [options.bin ?? SVC_BIN, ...args], {
      cwd: options.cwd ?? sandbox.cwd,
      env: { PATH: process.env.PATH ?? '', HOME: sandbox.home, XDG_CONFIG_HOME: join(sandbox.home, '.config'), ...options.env },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    child.stdin.end();
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`svc ${args.join(' ')} did not finish within ${options.timeoutMs ?? 30_000} ms\n${stdout}\n${stderr}`));
    }, options.timeoutMs ?? 30_000);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolvePromise(cliRun(code, stdout, stderr));
    });
  });
}

/** A finished svc run as the tests read it. */
export function cliRun(code: number | null, stdout: string, stderr: string): CliRun {
  return {
    code,
    stdout,
    stderr,
    json: () => {
      try {
        return JSON.parse(stdout);
      } catch {
        throw new Error(`stdout is not one JSON document (exit ${code}):\n${stdout}\nstderr:\n${stderr}`);
      }
    },
  };
}

export interface LiveService {
  api: RunningApi;
  worker: RunningProcess;
  databaseUrl: string;
  stop(): Promise<void>;
}

/** The built api and worker on a fresh database, as an operator's svc would find them. */
export async function startService(env: Record<string, string> = { OS_SECURITY_KEY: ROOT_KEY }): Promise<LiveService> {
  const databaseUrl = await createTestDatabase();
  const api = await startApi({ DATABASE_URL: databaseUrl, ...env });
  const worker = await startWorker({ DATABASE_URL: databaseUrl, PUBLIC_URL: api.url, ...env }).catch(async (error: unknown) => {
    await api.stop();
    throw error;
  });
  return {
    api,
    worker,
    databaseUrl,
    stop: async () => {
      await Promise.all([api.stop(), worker.stop()]);
    },
  };
}
