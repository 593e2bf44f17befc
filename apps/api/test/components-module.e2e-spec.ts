import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { createTestDatabase } from '../../../test/support/database';
import { streamRun } from '../../../test/support/event-stream';
import { call } from '../../../test/support/http';
import { callTool, connectMcp } from '../../../test/support/mcp';
import { ROOT_KEY } from '../../../test/support/principals';
import { bootFailureOf, RunningApi, RunningProcess, spawnNode, startApi, startWorker, waitFor } from '../../../test/support/processes';

const dir = mkdtempSync(join(tmpdir(), 'components-'));
function moduleFile(name: string, source: string): string {
  const file = join(dir, name);
  writeFileSync(file, source);
  return file;
}

// An ES module exporting an array: what a deployment writes without any helper.
const ESM_ARRAY = moduleFile(
  'agents.mjs',
  `
export default [
  {
    kind: 'agent', id: 'context-agent', name: 'Context agent', description: 'Shows what it sees',
    async run(ctx) {
      ctx.emit('one ');
      ctx.emit('two');
      return JSON.stringify({ message: ctx.message, userId: ctx.userId, history: ctx.history });
    },
  },
  {
    kind: 'agent', id: 'signal-agent', name: 'Waits for its signal',
    run(ctx) {
      // Never calls checkpoint(): only ctx.signal can stop it.
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => resolve('not cancelled'), 30000);
        ctx.signal.addEventListener('abort', () => { clearTimeout(timer); reject(new Error('stopped by signal')); });
      });
    },
  },
  { kind: 'team', id: 'own-team', name: 'Own team', run: async (ctx) => 'team:' + ctx.message },
  { kind: 'workflow', id: 'own-workflow', name: 'Own workflow', run: async (ctx) => 'workflow:' + ctx.message },
];
`,
);

describe('components from the deployment (COMPONENTS_MODULE)', () => {
  let api: RunningApi;
  let worker: RunningProcess;
  let databaseUrl: string;

  beforeAll(async () => {
    databaseUrl = await createTestDatabase();
    const env = {
      DATABASE_URL: databaseUrl,
      OS_SECURITY_KEY: ROOT_KEY,
      COMPONENTS_MODULE: ESM_ARRAY,
      DEMO_COMPONENTS: 'true',
      MCP_ENABLED: 'true',
      LOG_LEVEL: 'info',
    };
    api = await startApi(env);
    worker = await startWorker(env);
  });
  afterAll(async () => {
    await worker?.stop();
    await api?.stop();
  });

  const run = (kind: string, id: string, json: Record<string, unknown>) =>
    call(api.url, 'POST', `/${kind}/${id}/runs`, { token: ROOT_KEY, json });
  const runBody = async (runId: string, kind = 'agents', id = 'context-agent') =>
    (await call(api.url, 'GET', `/${kind}/${id}/runs/${runId}`, { token: ROOT_KEY })).body;

  it('lists the loaded components beside the demo set, over REST and MCP, and both processes log their ids', async () => {
    const agents = (await call(api.url, 'GET', '/agents', { token: ROOT_KEY })).body;
    const ids = (Array.isArray(agents) ? agents : agents.data).map((agent: { id: string }) => agent.id);
    expect(ids).toEqual(expect.arrayContaining(['echo-agent', 'context-agent', 'signal-agent']));
    const teams = (await call(api.url, 'GET', '/teams', { token: ROOT_KEY })).body;
    expect(JSON.stringify(teams)).toContain('own-team');
    const client = await connectMcp(api.url, ROOT_KEY);
    try {
      expect((await callTool(client, 'list_workflows')).text).toContain('own-workflow');
    } finally {
      await client.close();
    }
    for (const process of [api, worker]) {
      expect(process.output()).toContain(
        `Loaded 4 component(s) from ${ESM_ARRAY}: agent/context-agent, agent/signal-agent, team/own-team, workflow/own-workflow`,
      );
    }
  });

  it('runs an own agent, team and workflow synchronously', async () => {
    const answered = await run('agents', 'context-agent', { message: 'hi' });
    expect(answered.status, answered.text).toBe(200);
    expect(JSON.parse(answered.body.content)).toEqual({ message: 'hi', userId: null, history: [] });
    expect((await run('teams', 'own-team', { message: 'x' })).body.content).toBe('team:x');
    expect((await run('workflows', 'own-workflow', { message: 'y' })).body.content).toBe('workflow:y');
  });

  it('streams what the component emits as RunContent events', async () => {
    const events = await streamRun(api.url, '/agents/context-agent/runs', { token: ROOT_KEY, json: { message: 'streamed' } });
    expect(events.map((event) => event.event)).toEqual(['RunStarted', 'RunContent', 'RunContent', 'RunCompleted']);
    expect(events.slice(1, 3).map((event) => event.data.content)).toEqual(['one ', 'two']);
  });

  it('gives a component the earlier turns of its session as history, oldest first', async () => {
    const first = await run('agents', 'context-agent', { message: 'first', session_id: `history-${Date.now()}` });
    const second = await run('agents', 'context-agent', { message: 'second', session_id: first.body.session_id });
    expect(JSON.parse(second.body.content).history).toEqual([
      { role: 'user', content: 'first' },
      { role: 'assistant', content: first.body.content },
    ]);
    // A background run of the same session, on the worker, sees both earlier turns.
    const third = await run('agents', 'context-agent', { message: 'third', session_id: first.body.session_id, background: true });
    expect(third.status).toBe(202);
    await waitFor(async () => (await runBody(third.body.run_id)).status === 'completed', 20_000, 'the background run');
    expect(JSON.parse((await runBody(third.body.run_id)).content).history.map((turn: { content: string }) => turn.content)).toEqual([
      'first',
      first.body.content,
      'second',
      second.body.content,
    ]);
  });

  it('finishes a background run of an own component on the worker', async () => {
    const accepted = await run('workflows', 'own-workflow', { message: 'queued', background: true });
    expect(accepted.status).toBe(202);
    await waitFor(
      async () => (await runBody(accepted.body.run_id, 'workflows', 'own-workflow')).status === 'completed',
      20_000,
      'the background run',
    );
    expect((await runBody(accepted.body.run_id, 'workflows', 'own-workflow')).content).toBe('workflow:queued');
  });

  it('aborts ctx.signal when a streamed run is cancelled', async () => {
    const started = Date.now();
    const events = await streamRun(api.url, '/agents/signal-agent/runs', {
      token: ROOT_KEY,
      json: { message: 'wait' },
      onEvent: async (event) => {
        if (event.event === 'RunStarted') {
          expect((await call(api.url, 'POST', `/agents/signal-agent/runs/${event.data.run_id}/cancel`, { token: ROOT_KEY })).status).toBe(
            200,
          );
        }
      },
    });
    expect(events.at(-1)).toMatchObject({ event: 'RunCancelled', data: { status: 'cancelled' } });
    expect(Date.now() - started).toBeLessThan(10_000);
  });

  it('aborts ctx.signal when a background run is cancelled on the worker', async () => {
    const accepted = await run('agents', 'signal-agent', { message: 'wait', background: true });
    await waitFor(
      async () => (await runBody(accepted.body.run_id, 'agents', 'signal-agent')).status === 'running',
      20_000,
      'the run to start',
    );
    expect((await call(api.url, 'POST', `/agents/signal-agent/runs/${accepted.body.run_id}/cancel`, { token: ROOT_KEY })).status).toBe(200);
    await waitFor(
      async () => (await runBody(accepted.body.run_id, 'agents', 'signal-agent')).status === 'cancelled',
      10_000,
      'the run to be cancelled',
    );
  });
});

describe('the other module forms', () => {
  let databaseUrl: string;
  beforeAll(async () => {
    databaseUrl = await createTestDatabase();
  });

  it.each([
    [
      'CommonJS, async function of the helpers',
      'fn.cjs',
      `module.exports = async ({ defineComponent }) => [defineComponent({ kind: 'agent', id: 'form-agent', name: 'F', run: async (ctx) => 'cjs-fn:' + ctx.message })];`,
      'cjs-fn:m',
    ],
    [
      'CommonJS, components array',
      'array.cjs',
      `exports.components = [{ kind: 'agent', id: 'form-agent', name: 'F', run: async (ctx) => 'cjs-array:' + ctx.message }];`,
      'cjs-array:m',
    ],
    [
      'ES module, sync function',
      'fn.mjs',
      `export default ({ modelAgent }) => typeof modelAgent === 'function' ? [{ kind: 'agent', id: 'form-agent', name: 'F', run: async (ctx) => 'esm-fn:' + ctx.message }] : [];`,
      'esm-fn:m',
    ],
  ])('loads %s', async (_form, name, source, expected) => {
    const api = await startApi({ DATABASE_URL: databaseUrl, OS_SECURITY_KEY: ROOT_KEY, COMPONENTS_MODULE: moduleFile(name, source) });
    try {
      const response = await call(api.url, 'POST', '/agents/form-agent/runs', { token: ROOT_KEY, json: { message: 'm' } });
      expect(response.body.content, response.text).toBe(expected);
    } finally {
      await api.stop();
    }
  });

  it("loads a TypeScript module typed against authoring.ts, which the README's tsc command checks from outside the checkout", async () => {
    const authoring = join(process.cwd(), 'libs/runs/src/authoring.ts');
    const typed = (body: string) =>
      moduleFile(
        `typed-${Math.random().toString(36).slice(2)}.ts`,
        `import type { ComponentsModule } from '${authoring}';\nconst components: ComponentsModule = ({ defineComponent }) => [\n${body}\n];\nexport default components;\n`,
      );
    const good = typed(`  defineComponent({ kind: 'agent', id: 'typed-agent', name: 'T', run: async (ctx) => 'typed:' + ctx.message }),`);
    const wrong = typed(`  defineComponent({ kind: 'agent', id: 'typed-agent', name: 'T', run: async (ctx) => ctx.history.length }),`);
    // The command as the README gives it: no tsconfig, so no path aliases; what authoring.ts reaches must resolve without them.
    const check = (file: string) =>
      spawnSync(
        join(process.cwd(), 'node_modules/.bin/tsc'),
        [
          '--noEmit',
          '--ignoreConfig',
          '--allowImportingTsExtensions',
          '--module',
          'nodenext',
          '--moduleResolution',
          'nodenext',
          '--strict',
          file,
        ],
        { encoding: 'utf8', cwd: dir },
      );
    const passed = check(good);
    expect(passed.status, passed.stdout + passed.stderr).toBe(0);
    const refused = check(wrong);
    expect(refused.status).not.toBe(0);
    expect(refused.stdout).toMatch(/error TS2322: Type 'Promise<number>' is not assignable to type 'Promise<string>'/);

    const api = await startApi({ DATABASE_URL: databaseUrl, OS_SECURITY_KEY: ROOT_KEY, COMPONENTS_MODULE: good });
    try {
      const response = await call(api.url, 'POST', '/agents/typed-agent/runs', { token: ROOT_KEY, json: { message: 'm' } });
      expect(response.body.content, response.text).toBe('typed:m');
    } finally {
      await api.stop();
    }
  });

  const BAD: [string, () => string, RegExp][] = [
    ['a missing file', () => join(dir, 'missing.mjs'), /missing\.mjs: no such file$/m],
    [
      'a syntax error, and how to find it',
      () => moduleFile('syntax.mjs', 'const fine = 1;\n\nexport default [ { kind: "agent", id: ;'),
      /syntax\.mjs: cannot be loaded: SyntaxError: .* \(node --check \/.*syntax\.mjs shows where\)$/m,
    ],
    [
      'a throw at import, with its line',
      () => moduleFile('throws.mjs', 'const fine = 1;\nthrow new Error("no config");\nexport default [];'),
      /throws\.mjs: cannot be loaded: no config \(line 2\)$/m,
    ],
    [
      'a duplicate id',
      () =>
        moduleFile('dup.mjs', `const a = { kind: 'agent', id: 'twice', name: 'A', run: async () => '' }; export default [a, { ...a }];`),
      /dup\.mjs: duplicate id: agent 'twice'/m,
    ],
    [
      'a demo component’s id',
      () => moduleFile('demo.mjs', `export default [{ kind: 'agent', id: 'echo-agent', name: 'A', run: async () => '' }];`),
      /demo\.mjs: duplicate id: agent 'echo-agent'/m,
    ],
    [
      'a component without run',
      () => moduleFile('norun.mjs', `export default [{ kind: 'agent', id: 'lazy', name: 'A' }];`),
      /norun\.mjs: agent 'lazy' has no run function/m,
    ],
    [
      'a wrong kind',
      () => moduleFile('kind.mjs', `export default [{ kind: 'robot', id: 'r2', name: 'A', run: async () => '' }];`),
      /kind\.mjs: component #1: kind must be one of agent, team, workflow \(got "robot"\)/m,
    ],
    [
      'no array',
      () => moduleFile('object.cjs', `module.exports = { hello: 'world' };`),
      /object\.cjs: must export .* an array of components/m,
    ],
  ];

  it.each(BAD)('stops boot of api and worker on %s with one line naming the file and the problem', async (_case, file, message) => {
    const path = file();
    for (const entry of ['dist/apps/api/src/main.js', 'dist/apps/worker/src/main.js']) {
      const process = spawnNode(entry, { DATABASE_URL: databaseUrl, PORT: '0', DEMO_COMPONENTS: 'true', COMPONENTS_MODULE: path });
      expect(await process.exited, process.output()).toBe(1);
      // One line (a fatal JSON line off a terminal), saying what and where.
      expect(process.output().trim().split('\n')).toHaveLength(1);
      const output = bootFailureOf(process.output());
      expect(output).toMatch(message);
      expect(output.startsWith(`COMPONENTS_MODULE ${path}: `), output).toBe(true);
    }
  });
});
