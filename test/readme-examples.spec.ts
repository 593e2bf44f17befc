import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { createTestDatabase } from './support/database';
import { RunningApi, RunningProcess, startApi, startWorker } from './support/processes';

const README = readFileSync('README.md', 'utf8');
/** The README's blocks marked ```bash test, in order: the "Try it" walk-through. */
const BLOCKS = [...README.matchAll(/^```bash test\n([\s\S]*?)^```$/gm)].map((match) => match[1]);
const missing = ['bash', 'curl', 'jq'].filter((tool) => spawnSync('sh', ['-c', `command -v ${tool}`]).status !== 0);
if (missing.length > 0) {
  console.warn(`Skipping the README examples: ${missing.join(', ')} not installed (.ci/run installs them).`);
}

describe.skipIf(missing.length > 0)('README examples run as written', () => {
  let api: RunningApi;
  let worker: RunningProcess;
  let keyFile: string;

  beforeAll(async () => {
    const databaseUrl = await createTestDatabase();
    const key = `readme-key-${Date.now()}-0123456789`;
    keyFile = join(mkdtempSync(join(tmpdir(), 'readme-')), 'os-security-key');
    writeFileSync(keyFile, `${key}\n`, { mode: 0o600 });
    const env = { DATABASE_URL: databaseUrl, OS_SECURITY_KEY: key, DEMO_COMPONENTS: 'true', MCP_ENABLED: 'true' };
    api = await startApi(env);
    worker = await startWorker({ ...env, PUBLIC_URL: api.url });
  });
  afterAll(async () => {
    await worker?.stop();
    await api?.stop();
  });

  it('has the walk-through: mint, runs, streaming, background, cancel, schedules, MCP', () => {
    expect(BLOCKS.length).toBeGreaterThanOrEqual(7);
  });

  it('runs every marked block in one shell, against a started instance, and each does what its text says', () => {
    // Only the address and the key file differ from `npm start`: the test's instance runs on a free port.
    const script = ['set -euo pipefail', ...BLOCKS]
      .join('\n')
      .replaceAll('http://127.0.0.1:7777', api.url)
      .replaceAll('.data/os-security-key', keyFile);
    const run = spawnSync('timeout', ['90', 'bash', '-xc', script], { encoding: 'utf8', env: { PATH: process.env.PATH ?? '' } });
    const output = run.stdout;
    expect(run.status, `${run.stdout}\n${run.stderr.split('\n').slice(-15).join('\n')}`).toBe(0);
    expect(output).toMatch(/"principal": "sa:my-first-token-\d+"/);
    expect(output).toMatch(/"content": "hello"/);
    expect(output).toMatch(/event: RunStarted[\s\S]*event: RunContent[\s\S]*"content":"streamed"[\s\S]*event: RunCompleted/);
    expect(output).toMatch(/"status": "completed",\s*"content": "Slept 1 s"/);
    expect(output).toContain('"cancel');
    expect(output).toMatch(/"name": "nightly-echo",\s*"next_run_at": \d+/);
    expect(output).toContain('"get_config"');
    expect(output).toContain('"run_agent"');
    // A2A: the card read with the key, a v1.0 SendMessage and a v0.3 message/send, each finished.
    expect(output).toMatch(/"supportedInterfaces": \[/);
    expect(output).toContain('"TASK_STATE_COMPLETED"');
    expect(output).toMatch(/^"completed"$/m);
    // As the README says, the blocks run again as they are on the same instance (the names they mint are free).
    const again = spawnSync('timeout', ['90', 'bash', '-xc', script], { encoding: 'utf8', env: { PATH: process.env.PATH ?? '' } });
    expect(again.status, again.stderr.split('\n').slice(-15).join('\n')).toBe(0);
    expect(again.stdout).toMatch(/"principal": "sa:my-first-token-\d+"/);
  }, 200_000);
});
