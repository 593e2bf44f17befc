import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer as createHttpServer, Server as HttpServer } from 'node:http';
import { createServer, Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

import { afterEach, describe, expect, it } from 'vitest';

import { startEmbeddedPostgres } from '../scripts/embedded-postgres.mjs';
import { cliSandbox, runCli } from './support/cli';
import { testPort } from './support/ports';
import { alive, RunningProcess, spawnNode, waitFor } from './support/processes';

const QUICKSTART = resolve('scripts/quickstart.mjs');
const READY_LINE = 'Press Ctrl-C to stop.';

function descendants(pid: number): number[] {
  const table = execFileSync('ps', ['-eo', 'pid=,ppid='], { encoding: 'utf8' })
    .trim()
    .split('\n')
    .map((line) => line.trim().split(/\s+/).map(Number));
  const children = table.filter(([, parent]) => parent === pid).map(([child]) => child);
  return children.flatMap((child) => [child, ...descendants(child)]);
}

/** The pid of the quickstart's child running dist/apps/<app>. */
function childRunning(quickstart: RunningProcess, app: string): number {
  const pid = descendants(quickstart.child.pid!).find((child) => {
    try {
      return readFileSync(`/proc/${child}/cmdline`, 'utf8').includes(`dist/apps/${app}/src/main.js`);
    } catch {
      return false;
    }
  });
  if (pid === undefined) {
    throw new Error(`no ${app} process under the quickstart`);
  }
  return pid;
}

/** A temporary data directory and working directory (where the quickstart writes .env), removed after each test. */
const temporary: string[] = [];
function tempDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  temporary.push(dir);
  return dir;
}

const running: RunningProcess[] = [];
/**
 * `npm start` as a user runs it, in `cwd`, in a process group of its own so that a test can send
 * SIGINT to the whole group, as a terminal's Ctrl-C does.
 */
function startQuickstart(cwd: string, env: Record<string, string>): RunningProcess {
  const quickstart = spawnNode(QUICKSTART, { LOG_LEVEL: 'warn', HOME: process.env.HOME ?? '/root', ...env }, { cwd, detached: true });
  running.push(quickstart);
  return quickstart;
}

async function untilReady(quickstart: RunningProcess): Promise<void> {
  await Promise.race([
    waitFor(async () => quickstart.output().includes(READY_LINE), 90_000, 'the quickstart to say it is ready'),
    quickstart.exited.then((code) => {
      throw new Error(`quickstart exited with ${code}:\n${quickstart.output()}`);
    }),
  ]);
}

/** Ctrl-C on a terminal: SIGINT to the foreground process group, then wait for the exit. */
function ctrlC(quickstart: RunningProcess): Promise<number | null> {
  process.kill(-quickstart.child.pid!, 'SIGINT');
  return quickstart.exited;
}

function stackFrames(output: string): string[] {
  return output.split('\n').filter((line) => /^\s+at /.test(line) || line.includes('\\n    at '));
}

/** Log lines at warn or above: pino's JSON (level 40+) or plain WARN/ERROR text. */
function warningsIn(output: string): string[] {
  return output.split('\n').filter((line) => /"level":(4|5|6)\d/.test(line) || /\b(WARN|WARNING|ERROR|FATAL)\b/.test(line));
}

/** A quickstart on its own port and data directory, ready, with every process it started (PostgreSQL's postmaster too). */
async function readyQuickstart(): Promise<{ quickstart: RunningProcess; processes: number[] }> {
  const dataDir = tempDir('quickstart-');
  const quickstart = startQuickstart(tempDir('quickstart-cwd-'), { PORT: String(await testPort()), PLATFORM_DATA_DIR: dataDir });
  await untilReady(quickstart);
  const postmaster = Number(readFileSync(join(dataDir, 'postgres', 'postmaster.pid'), 'utf8').split('\n')[0]);
  return { quickstart, processes: [...descendants(quickstart.child.pid!), postmaster] };
}

/** The line npm start writes above the SERVICE_URL it owns. */
const ENV_MARKER = '# Written by npm start (scripts/quickstart.mjs) at each start: where svc finds this instance.';

afterEach(async () => {
  for (const quickstart of running.splice(0)) {
    if (quickstart.child.exitCode === null && quickstart.child.signalCode === null) {
      const timer = setTimeout(() => void quickstart.stop('SIGKILL'), 45_000);
      await quickstart.stop('SIGINT');
      clearTimeout(timer);
    }
  }
  for (const dir of temporary.splice(0)) {
    rmSync(dir, { recursive: true, force: true });
  }
}, 60_000);

describe('npm start (scripts/quickstart.mjs)', () => {
  it('serves the api once ready, records SERVICE_URL for svc, prints a command that works, and stops cleanly on Ctrl-C', async () => {
    // A space in the path: the printed command must still paste as is.
    const dataDir = tempDir('quickstart data-');
    const cwd = tempDir('quickstart-cwd-');
    // The user's own lines in .env survive.
    writeFileSync(join(cwd, '.env'), '# mine\nOTHER=kept\n');
    const port = await testPort();
    const quickstart = startQuickstart(cwd, { PORT: String(port), PLATFORM_DATA_DIR: dataDir });
    const url = `http://127.0.0.1:${port}`;
    await untilReady(quickstart);
    // Nothing claims readiness before the api is ready.
    expect((await fetch(`${url}/readyz`)).status).toBe(200);
    expect((await fetch(`${url}/docs`)).status).toBe(200);
    const info = (await fetch(`${url}/info`).then((r) => r.json())) as { mcp: { enabled: boolean } };
    expect(info.mcp.enabled).toBe(true);
    expect(statSync(join(dataDir, 'os-security-key')).mode & 0o777).toBe(0o600);
    expect(statSync(join(dataDir, 'admin-header')).mode & 0o777).toBe(0o600);
    expect(quickstart.output()).toContain(`Docs:     ${url}/docs`);
    // The quickstart names the api for the worker's fires: no warning a newcomer could take for a fault.
    expect(quickstart.output()).not.toMatch(/WARN|PUBLIC_URL is unset/);

    // SERVICE_URL in ./.env, other lines untouched, nothing secret.
    const envText = readFileSync(join(cwd, '.env'), 'utf8');
    expect(envText).toMatch(/^# mine\nOTHER=kept\n/);
    expect(envText).toContain(`\nSERVICE_URL=${url}\n`);
    expect(envText).not.toContain(readFileSync(join(dataDir, 'os-security-key'), 'utf8').trim());
    // svc in that directory finds this instance on its non-default port without flags.
    const sandbox = cliSandbox();
    const status = await runCli(['status', '--json'], sandbox, { cwd });
    expect(status.code, status.stdout + status.stderr).toBe(0);
    expect(status.json().os).toMatchObject({ url, url_source: 'env-file', url_source_file: '.env' });

    // Every printed command pastes as is: the curl line runs in a shell and is let in.
    const curl = quickstart
      .output()
      .split('\n')
      .find((line) => line.trim().startsWith('curl '));
    expect(curl).toBeDefined();
    expect(curl).not.toContain('#');
    // The key stays out of curl's argv, which any user of the machine can read while it runs.
    expect(curl).toMatch(/ -H @.*admin-header'?$/);
    expect(curl).not.toContain('Bearer');
    const answer = execFileSync('sh', ['-c', `${curl!.trim()} -o /dev/null -w '%{http_code}'`], { cwd, encoding: 'utf8' });
    expect(answer).toBe('200');

    const started = descendants(quickstart.child.pid!);
    expect(started.length).toBeGreaterThanOrEqual(3); // api, worker, postgres (+ its workers)
    // Only the api holds the root credential; the worker has its own per-schedule credentials.
    const environOf = (app: string) => readFileSync(`/proc/${childRunning(quickstart, app)}/environ`, 'utf8').split('\0');
    expect(environOf('api').some((variable) => variable.startsWith('OS_SECURITY_KEY='))).toBe(true);
    expect(environOf('worker').some((variable) => variable.startsWith('OS_SECURITY_KEY='))).toBe(false);

    // A second start on the same port is told this checkout's service already runs, and how to run a second copy.
    const second = startQuickstart(tempDir('quickstart-cwd-'), { PORT: String(port), PLATFORM_DATA_DIR: tempDir('quickstart-') });
    expect(await second.exited).not.toBe(0);
    expect(second.output().trim()).toMatch(
      /^\[quickstart\] This checkout's service is already running \(pid \d+ holds port \d+\): use it, or stop it with Ctrl-C in its npm start\. A second copy needs its own port and data: PORT=\d+ PLATFORM_DATA_DIR=\.data-2 npm start$/,
    );

    // A second copy in the same directory leaves .env naming the first, which still runs (and whose key the shell has).
    const secondPort = await testPort();
    const copy = startQuickstart(cwd, { PORT: String(secondPort), PLATFORM_DATA_DIR: tempDir('quickstart-') });
    await untilReady(copy);
    expect(readFileSync(join(cwd, '.env'), 'utf8')).toBe(envText);
    expect(copy.output()).toContain(
      `.env's SERVICE_URL=${url} is another copy, still running: left as is; svc reaches this one with --url http://127.0.0.1:${secondPort}`,
    );
    expect(await ctrlC(copy)).toBe(0);

    // A second start on the first's data (another port) leaves the first running, and says how to run beside it.
    const samePort = await testPort();
    const sameData = startQuickstart(tempDir('quickstart-cwd-'), { PORT: String(samePort), PLATFORM_DATA_DIR: dataDir });
    expect(await sameData.exited).not.toBe(0);
    expect(sameData.output().trim()).toMatch(
      new RegExp(
        `^\\[quickstart\\] ${dataDir.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} holds the data of an npm start still running \\(pid ${quickstart.child.pid}; its PostgreSQL is pid \\d+\\)\\. Leave it running: a second copy needs its own data \\(this port is free\\): PORT=${samePort} PLATFORM_DATA_DIR=\\.data-2 npm start\\. Or stop that one first \\(Ctrl-C in its npm start\\), then run npm start again\\.$`,
      ),
    );
    expect((await fetch(`${url}/readyz`)).status).toBe(200);

    const before = quickstart.output().length;
    expect(await ctrlC(quickstart)).toBe(0);
    const shutdownLog = quickstart.output().slice(before);
    expect(warningsIn(shutdownLog), shutdownLog).toEqual([]);
    expect(stackFrames(shutdownLog), shutdownLog).toEqual([]);
    await waitFor(async () => started.every((pid) => !alive(pid)), 15_000, 'every child to exit');
  }, 150_000);

  describe('a port already taken', () => {
    let holder: Server | undefined;
    afterEach(() => new Promise<void>((done) => (holder ? holder.close(() => done()) : done())));

    it('says so in one line with the fix before anything else, and exits non-zero without a stack trace', async () => {
      const port = await testPort();
      holder = createServer();
      await new Promise<void>((done) => holder!.listen(port, '127.0.0.1', done));
      const dataDir = tempDir('quickstart-');
      const quickstart = startQuickstart(tempDir('quickstart-cwd-'), { PORT: String(port), PLATFORM_DATA_DIR: dataDir });
      expect(await quickstart.exited).not.toBe(0);
      const output = quickstart.output();
      const lines = output.trim().split('\n');
      expect(lines, output).toHaveLength(1);
      expect(lines[0]).toMatch(
        new RegExp(
          `^\\[quickstart\\] Port ${port} is already in use \\(by pid ${process.pid}: .+\\)\\. Start on another port: PORT=\\d+ PLATFORM_DATA_DIR=${dataDir} npm start$`,
        ),
      );
      expect(output).not.toMatch(/^\s+at /m);
      expect(output).not.toContain('API:');
      expect(output).not.toContain('Press Ctrl-C');
    }, 60_000);
  });

  describe("a server that answers as this service does but is not this checkout's", () => {
    const impostors: HttpServer[] = [];
    afterEach(async () => {
      await Promise.all(impostors.splice(0).map((server) => new Promise((done) => server.close(done))));
    });

    /** On `port`: ready, and /info shaped as the service's. svc would send it this checkout's key. */
    async function impostor(port: number): Promise<void> {
      const server = createHttpServer((request, response) => {
        response.setHeader('content-type', 'application/json');
        response.end(request.url === '/info' ? JSON.stringify({ os_id: 'platform-service', auth_mode: 'security_key', a2a: {} }) : '{}');
      });
      impostors.push(server);
      await new Promise<void>((done) => server.listen(port, '127.0.0.1', done));
    }

    it('does not keep .env naming it, however like a copy of this service it answers', async () => {
      const cwd = tempDir('quickstart-cwd-');
      const elsewhere = await testPort();
      await impostor(elsewhere);
      writeFileSync(join(cwd, '.env'), `${ENV_MARKER}\nSERVICE_URL=http://127.0.0.1:${elsewhere}\n`);
      const port = await testPort();
      const quickstart = startQuickstart(cwd, { PORT: String(port), PLATFORM_DATA_DIR: tempDir('quickstart-') });
      await untilReady(quickstart);
      expect(readFileSync(join(cwd, '.env'), 'utf8')).toBe(`${ENV_MARKER}\nSERVICE_URL=http://127.0.0.1:${port}\n`);
      expect(quickstart.output()).not.toContain('another copy');
      expect(await ctrlC(quickstart)).toBe(0);
    }, 150_000);

    it("taking the api's port after the check: the start fails and .env never names that server", async () => {
      const cwd = tempDir('quickstart-cwd-');
      const port = await testPort();
      const quickstart = startQuickstart(cwd, { PORT: String(port), PLATFORM_DATA_DIR: tempDir('quickstart-') });
      // The port was free when checked; PostgreSQL starts after the check, and the api listens after it.
      await waitFor(async () => quickstart.output().includes('Starting embedded PostgreSQL'), 60_000, 'the port check to pass');
      await impostor(port);
      expect(await quickstart.exited).not.toBe(0);
      expect(quickstart.output()).toMatch(/The api failed to start/);
      expect(quickstart.output()).not.toContain('Press Ctrl-C');
      expect(existsSync(join(cwd, '.env'))).toBe(false);
    }, 150_000);
  });

  it('refuses a data directory held by a PostgreSQL still running, naming its pid and what to do; a stale postmaster.pid does not block', async () => {
    const dataDir = tempDir('quickstart-');
    chmodSync(dataDir, 0o711);
    const pidFile = join(dataDir, 'postgres', 'postmaster.pid');
    // A PostgreSQL left running on the data directory, as after a crash of an earlier start.
    const db = await startEmbeddedPostgres({
      databaseDir: join(dataDir, 'postgres'),
      port: await testPort(),
      passwordFile: join(dataDir, 'postgres-password'),
    });
    try {
      const pid = Number(readFileSync(pidFile, 'utf8').split('\n')[0]);
      const refused = startQuickstart(tempDir('quickstart-cwd-'), { PORT: String(await testPort()), PLATFORM_DATA_DIR: dataDir });
      expect(await refused.exited).not.toBe(0);
      const output = refused.output();
      expect(output.trim().split('\n'), output).toHaveLength(1);
      expect(output).toContain(`is in use by PostgreSQL pid ${pid} (`);
      expect(output).toContain(`kill -INT ${pid}`);
      expect(output).not.toContain('undefined');
      expect(output).not.toMatch(/^\s+at /m);
      expect(alive(pid)).toBe(true);

      // That PostgreSQL dies without cleaning up: its postmaster.pid stays, naming a dead pid.
      process.kill(pid, 'SIGKILL');
      await waitFor(async () => !alive(pid), 10_000, 'the killed PostgreSQL to exit');
      expect(readFileSync(pidFile, 'utf8').split('\n')[0]).toBe(String(pid));
      const started = startQuickstart(tempDir('quickstart-cwd-'), { PORT: String(await testPort()), PLATFORM_DATA_DIR: dataDir });
      await untilReady(started);
      expect(await ctrlC(started)).toBe(0);
    } finally {
      await db.stop();
    }
  }, 150_000);

  it('closing the terminal (SIGHUP) stops the api and the worker first, then PostgreSQL, leaving no process behind', async () => {
    const { quickstart, processes } = await readyQuickstart();

    process.kill(-quickstart.child.pid!, 'SIGHUP');
    expect(await quickstart.exited).toBe(0);
    const output = quickstart.output();
    expect(output.indexOf('Stopping api and worker')).toBeGreaterThan(-1);
    expect(output.indexOf('Stopping PostgreSQL')).toBeGreaterThan(output.indexOf('Stopping api and worker'));
    await waitFor(async () => processes.every((pid) => !alive(pid)), 15_000, 'every child and PostgreSQL to exit');
  }, 150_000);

  it('Ctrl-C with its output piped to a reader that is already gone (npm start | tee, tee ended first) still stops everything in order', async () => {
    const { quickstart, processes } = await readyQuickstart();

    // The reader goes: every line the quickstart writes from now on meets a closed pipe.
    quickstart.child.stdout!.destroy();
    quickstart.child.stderr!.destroy();
    expect(await ctrlC(quickstart)).toBe(0);
    await waitFor(async () => processes.every((pid) => !alive(pid)), 15_000, 'every child and PostgreSQL to exit');
  }, 150_000);

  it('killed with -9, it leaves no api or worker behind: they stop by themselves, and the next start names the PostgreSQL left', async () => {
    const dataDir = tempDir('quickstart-');
    const port = await testPort();
    const quickstart = startQuickstart(tempDir('quickstart-cwd-'), { PORT: String(port), PLATFORM_DATA_DIR: dataDir });
    await untilReady(quickstart);
    const apps = [childRunning(quickstart, 'api'), childRunning(quickstart, 'worker')];
    const postmaster = Number(readFileSync(join(dataDir, 'postgres', 'postmaster.pid'), 'utf8').split('\n')[0]);
    try {
      // Only the quickstart: nothing of it runs to stop its children.
      process.kill(quickstart.child.pid!, 'SIGKILL');
      await quickstart.exited;
      await waitFor(async () => apps.every((pid) => !alive(pid)), 20_000, 'the orphaned api and worker to stop');
      expect(alive(postmaster)).toBe(true);

      const again = startQuickstart(tempDir('quickstart-cwd-'), { PORT: String(port), PLATFORM_DATA_DIR: dataDir });
      expect(await again.exited).not.toBe(0);
      expect(again.output()).toContain(`is in use by PostgreSQL pid ${postmaster} (`);
      expect(again.output()).toContain(`kill -INT ${postmaster}`);
    } finally {
      apps.filter(alive).forEach((pid) => process.kill(pid, 'SIGKILL'));
      process.kill(postmaster, 'SIGINT');
      await waitFor(async () => !alive(postmaster), 15_000, 'the PostgreSQL left behind to stop');
    }
  }, 150_000);

  it('when the worker dies mid-run, one line names it and how it ended, and everything stops', async () => {
    const cwd = tempDir('quickstart-cwd-');
    // A SERVICE_URL the user set is left alone, and the quickstart says so.
    writeFileSync(join(cwd, '.env'), 'SERVICE_URL=http://127.0.0.1:1\n');
    const quickstart = startQuickstart(cwd, { PORT: String(await testPort()), PLATFORM_DATA_DIR: tempDir('quickstart-') });
    await untilReady(quickstart);
    expect(readFileSync(join(cwd, '.env'), 'utf8')).toBe('SERVICE_URL=http://127.0.0.1:1\n');
    expect(quickstart.output()).toContain('.env sets SERVICE_URL=http://127.0.0.1:1 (not written by npm start), left as is');
    const started = descendants(quickstart.child.pid!);

    process.kill(childRunning(quickstart, 'worker'), 'SIGKILL');
    expect(await quickstart.exited).not.toBe(0);
    const reports = quickstart
      .output()
      .split('\n')
      .filter((line) => line.includes('The worker'));
    expect(reports).toEqual([expect.stringMatching(/^\[quickstart\] The worker stopped \(signal SIGKILL\)\. Stopping everything/)]);
    await waitFor(async () => started.every((pid) => !alive(pid)), 15_000, 'every child to exit');
  }, 150_000);

  it('when PostgreSQL dies mid-run, one line says so and api and worker are stopped', async () => {
    const dataDir = tempDir('quickstart-');
    const cwd = tempDir('quickstart-cwd-');
    // What an earlier start wrote, naming an instance that is gone: this start takes SERVICE_URL over.
    writeFileSync(join(cwd, '.env'), `${ENV_MARKER}\nSERVICE_URL=http://127.0.0.1:1\n`);
    const port = await testPort();
    const quickstart = startQuickstart(cwd, { PORT: String(port), PLATFORM_DATA_DIR: dataDir });
    await untilReady(quickstart);
    expect(readFileSync(join(cwd, '.env'), 'utf8')).toBe(`${ENV_MARKER}\nSERVICE_URL=http://127.0.0.1:${port}\n`);
    const api = childRunning(quickstart, 'api');
    const worker = childRunning(quickstart, 'worker');
    const postmaster = Number(readFileSync(join(dataDir, 'postgres', 'postmaster.pid'), 'utf8').split('\n')[0]);

    process.kill(postmaster, 'SIGKILL');
    expect(await quickstart.exited).not.toBe(0);
    const reports = quickstart
      .output()
      .split('\n')
      .filter((line) => line.includes('PostgreSQL stopped'));
    expect(reports).toEqual([
      '[quickstart] PostgreSQL stopped (signal SIGKILL). Stopping everything; see the lines above, then run npm start again.',
    ]);
    await waitFor(async () => !alive(api) && !alive(worker), 15_000, 'api and worker to exit');
  }, 150_000);
});
