import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { describe, expect, it } from 'vitest';

import { freePort } from '../scripts/embedded-postgres.mjs';
import { spawnNode, waitFor } from './support/processes';

function descendants(pid: number): number[] {
  const table = execFileSync('ps', ['-eo', 'pid=,ppid='], { encoding: 'utf8' })
    .trim()
    .split('\n')
    .map((line) => line.trim().split(/\s+/).map(Number));
  const children = table.filter(([, parent]) => parent === pid).map(([child]) => child);
  return children.flatMap((child) => [child, ...descendants(child)]);
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe('npm start (scripts/quickstart.mjs)', () => {
  it('serves /health and /docs, keeps the key owner-only, and leaves no process behind on Ctrl-C', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'quickstart-'));
    const port = await freePort();
    const quickstart = spawnNode('scripts/quickstart.mjs', { PORT: String(port), PLATFORM_DATA_DIR: dataDir, LOG_LEVEL: 'warn', HOME: process.env.HOME ?? '/root' });
    try {
      const url = `http://127.0.0.1:${port}`;
      await Promise.race([
        waitFor(async () => (await fetch(`${url}/health`)).ok, 60_000, 'quickstart api'),
        quickstart.exited.then((code) => {
          throw new Error(`quickstart exited with ${code}:\n${quickstart.output()}`);
        }),
      ]);
      expect((await fetch(`${url}/docs`)).status).toBe(200);
      const info = (await fetch(`${url}/info`).then((r) => r.json())) as { mcp: { enabled: boolean } };
      expect(info.mcp.enabled).toBe(true);
      expect(statSync(join(dataDir, 'os-security-key')).mode & 0o777).toBe(0o600);
      expect(quickstart.output()).toContain(`Docs:     ${url}/docs`);
      const started = descendants(quickstart.child.pid!);
      expect(started.length).toBeGreaterThanOrEqual(3); // api, worker, postgres (+ its workers)
      // Only the api holds the root credential; the worker has its own per-schedule credentials.
      const environOf = (app: string) => {
        const pid = started.find((child) => readFileSync(`/proc/${child}/cmdline`, 'utf8').includes(`dist/apps/${app}/src/main.js`));
        return readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0');
      };
      expect(environOf('api').some((variable) => variable.startsWith('OS_SECURITY_KEY='))).toBe(true);
      expect(environOf('worker').some((variable) => variable.startsWith('OS_SECURITY_KEY='))).toBe(false);

      expect(await quickstart.stop('SIGINT')).toBe(0);
      await waitFor(async () => started.every((pid) => !alive(pid)), 15_000, 'every child to exit');
    } finally {
      await quickstart.stop('SIGKILL');
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 90_000);
});
