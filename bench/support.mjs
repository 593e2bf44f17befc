// Shared bench plumbing: a throwaway embedded PostgreSQL, migrations, and the built apps as child processes.
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';

import autocannon from 'autocannon';

import { freePort, startEmbeddedPostgres } from '../scripts/embedded-postgres.mjs';

/**
 * A throwaway PostgreSQL with the migrations applied (or DATABASE_URL's), and `cpuMillis()`: the CPU its server
 * has used so far (null for DATABASE_URL's, which may not be this machine's).
 */
export async function startDatabase() {
  if (process.env.DATABASE_URL) {
    return { url: process.env.DATABASE_URL, stop: async () => undefined, cpuMillis: () => null };
  }
  const dir = mkdtempSync(join(tmpdir(), 'platform-bench-pg-'));
  const db = await startEmbeddedPostgres({ databaseDir: dir, port: await freePort(), persistent: false });
  const url = db.url();
  execFileSync(process.execPath, ['dist/libs/database/src/migrate.main.js'], {
    env: { ...process.env, DATABASE_URL: url },
    stdio: 'ignore',
  });
  const postmaster = Number(readFileSync(join(dir, 'postmaster.pid'), 'utf8').split('\n')[0]);
  return {
    url,
    stop: async () => {
      await db.stop();
      rmSync(dir, { recursive: true, force: true });
    },
    cpuMillis: () => serverCpuMillis(postmaster),
  };
}

/**
 * CPU of a PostgreSQL server: its postmaster's, that of every process it forked that still runs (backends, workers),
 * and that of those that ended (the kernel adds an ended child's to its parent's once reaped), so that it never drops.
 * A child reaped between reading the postmaster and reading its children would be missed (or, the other way round,
 * counted twice): the reading is taken again (a few times at most) until the postmaster's count of ended children
 * held still across it.
 */
function serverCpuMillis(postmaster) {
  for (let attempt = 1; ; attempt += 1) {
    const own = statFields(postmaster);
    let total = ticksToMillis(own[11] + own[12] + own[13] + own[14]);
    for (const entry of readdirSync('/proc')) {
      if (!/^\d+$/.test(entry)) {
        continue;
      }
      try {
        const fields = statFields(entry);
        if (fields[1] === postmaster) {
          total += ticksToMillis(fields[11] + fields[12]);
        }
      } catch {
        // Gone meanwhile: if it was one of the server's, the check below sees it reaped.
      }
    }
    const after = statFields(postmaster);
    if ((after[13] === own[13] && after[14] === own[14]) || attempt === 5) {
      return total;
    }
  }
}

/** Starts a built app and waits for its health route: the api's /health, or the worker's /readyz on WORKER_HEALTH_PORT. */
export async function startApp(script, env, { portVariable = 'PORT', healthPath = '/health' } = {}) {
  const port = await freePort();
  const child = spawn(process.execPath, [script], {
    env: { PATH: process.env.PATH, LOG_LEVEL: 'warn', HOST: '127.0.0.1', [portVariable]: String(port), ...env },
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    try {
      if ((await fetch(`${url}${healthPath}`)).ok) {
        return { url, child, stop: () => new Promise((done) => (child.once('exit', done), child.kill('SIGTERM'))) };
      }
    } catch {
      // not listening yet
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  child.kill('SIGKILL');
  throw new Error(`${script} did not become ready`);
}

export function machine() {
  return `${cpus().length} × ${cpus()[0]?.model ?? 'cpu'}, ${Math.round(totalmem() / 2 ** 30)} GiB, Node ${process.version}, ${new Date().toISOString().slice(0, 10)}`;
}

/** `1.2 / 0.8 / 0.5`: the 1, 5 and 15 minute load averages now, so a result says how busy its machine was. */
export function load() {
  return loadavg()
    .map((value) => value.toFixed(1))
    .join(' / ');
}

export function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
}

/** The fields of /proc/<pid>/stat after the command's name: ppid at 1, utime and stime at 11 and 12, cutime and cstime (children waited for) at 13 and 14. */
const statFields = (pid) => readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ').map(Number);

/** Clock ticks to milliseconds: USER_HZ is 100 on Linux. */
const ticksToMillis = (ticks) => (ticks * 1000) / 100;

/** CPU time (user + system, in milliseconds) a child process has used so far, from /proc. */
export function cpuMillis(pid) {
  const fields = statFields(pid);
  return ticksToMillis(fields[11] + fields[12]);
}

/**
 * One autocannon round against a server started by startApp (or with its `child`): requests/s and the
 * server's CPU per request. Any non-2xx answer or error fails the bench rather than flattering it.
 */
export async function loadRound(server, request, database) {
  const before = cpuMillis(server.child.pid);
  const databaseBefore = database?.cpuMillis() ?? null;
  const result = await autocannon(request);
  if (result.non2xx > 0 || result.errors > 0) {
    throw new Error(`${server.url}: ${result.non2xx} non-2xx, ${result.errors} errors`);
  }
  const perRequest = (millis) => (millis * 1000) / result.requests.total;
  return {
    rps: result.requests.average,
    cpuMicros: perRequest(cpuMillis(server.child.pid) - before),
    // The database's CPU a request, when it is one this bench started (every server process counted).
    databaseMicros: databaseBefore === null ? null : perRequest(database.cpuMillis() - databaseBefore),
  };
}
