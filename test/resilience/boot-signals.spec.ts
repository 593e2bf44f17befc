import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer, Server, Socket } from 'node:net';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { testPort } from '../support/ports';
import { spawnProcess, waitFor } from '../support/processes';

/**
 * In a container node is PID 1, which ignores every signal it has no handler for. These tests make it PID 1
 * of a PID namespace of its own (unshare, which needs root: CI runs as root) and stop it while its boot waits
 * for a database that never answers.
 */
const canUnshare = spawnSync('unshare', ['--pid', '--fork', '--kill-child', 'true']).status === 0;
if (!canUnshare) {
  console.warn('Skipping the boot-signal checks: `unshare --pid` needs root and util-linux (CI runs as root).');
}

/** The pid, outside the namespace, of the one child of `unshare --fork`: the app, PID 1 inside. */
async function childOf(pid: number): Promise<number> {
  for (let attempt = 0; attempt < 100; attempt += 1) {
    const [child] = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean);
    if (child) {
      return Number(child);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`unshare (pid ${pid}) started no child`);
}

describe.skipIf(!canUnshare)('a stop signal while the app boots, as PID 1', () => {
  /** Accepts connections and never answers: a database the boot keeps waiting for. */
  let silent: Server;
  const sockets: Socket[] = [];
  let databaseUrl: string;

  beforeAll(async () => {
    silent = createServer((socket) => sockets.push(socket));
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const { port } = silent.address() as { port: number };
    databaseUrl = `postgresql://platform:secret@127.0.0.1:${port}/platform`;
  });
  afterAll(async () => {
    sockets.forEach((socket) => socket.destroy());
    await new Promise((resolve) => silent.close(resolve));
  });

  for (const [app, script] of [
    ['api', 'dist/apps/api/src/main.js'],
    ['worker', 'dist/apps/worker/src/main.js'],
  ] as const) {
    it(`the ${app} exits at once with 128 + the signal's number, rather than ignoring SIGTERM until SIGKILL`, async () => {
      const booting = spawnProcess('unshare', ['--pid', '--fork', '--kill-child', process.execPath, script], {
        DATABASE_URL: databaseUrl,
        PORT: String(await testPort()),
        WORKER_HEALTH_PORT: String(await testPort()),
      });
      const connectionsBefore = sockets.length;
      try {
        const pid = await childOf(booting.child.pid!);
        // Well into the boot: connected to the database that never answers (a fixed wait could end, on a busy
        // machine, while node was still loading its modules, before main ran).
        await waitFor(async () => sockets.length > connectionsBefore, 30_000, `the ${app} to connect to the database`);
        expect(booting.child.exitCode, booting.output()).toBeNull();
        process.kill(pid, 'SIGTERM');
        const exited = await Promise.race([booting.exited, new Promise((resolve) => setTimeout(() => resolve('still running'), 5_000))]);
        expect(exited, booting.output()).toBe(128 + 15);
        expect(booting.output()).toContain(`The ${app} stopped on SIGTERM while starting.`);
      } finally {
        await booting.stop('SIGKILL');
      }
    });
  }
});
