import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

import { afterEach, describe, expect, it } from 'vitest';

import { spawnProcess, waitFor } from './support/processes';

// `npm start`, `npm test` and `npm run bench` run through scripts/supported-node.mjs: on a Node.js older
// than package.json's engines it fetches Node.js 22 from the npm registry and runs the command on it.
const SCRIPT = resolve('scripts/supported-node.mjs');
const FALLBACK = '22.23.3';
const minimum = /\d+\.\d+\.\d+/.exec(JSON.parse(readFileSync('package.json', 'utf8')).engines.node as string)![0];

const older = (version: string) => {
  const [have, need] = [version, minimum].map((v) => v.replace(/^v/, '').split('.').map(Number));
  const differs = need.findIndex((part, index) => have[index] !== part);
  return differs !== -1 && have[differs] < need[differs];
};

/** A Node.js on this machine older than the service supports (Debian's, on the CI machine), if any. */
function olderNodeHere(): string | undefined {
  const onPath = spawnSync('sh', ['-c', 'which -a node'], { encoding: 'utf8' }).stdout.split('\n');
  for (const candidate of [...onPath, '/usr/bin/node', '/usr/local/bin/node'].filter(Boolean)) {
    const version = spawnSync(candidate, ['--version'], { encoding: 'utf8' }).stdout?.trim();
    if (version && older(version)) {
      return candidate;
    }
  }
  return undefined;
}

/** Else Node.js 20 as the npm registry ships it (as the script fetches 22), so the checks run on any machine. */
function olderNodeFetched(): string | undefined {
  const into = mkdtempSync(join(tmpdir(), 'older-node-'));
  const pack = spawnSync('npm', ['pack', '--loglevel=error', `node-${process.platform}-${process.arch}@20.20.2`], {
    cwd: into,
    encoding: 'utf8',
  });
  const tarball = pack.stdout?.trim().split('\n').at(-1);
  if (pack.status !== 0 || !tarball || spawnSync('tar', ['-xzf', tarball], { cwd: into }).status !== 0) {
    console.warn(`Could not fetch an older Node.js from the npm registry: ${pack.stderr?.trim()}`);
    return undefined;
  }
  return join(into, 'package', 'bin', 'node');
}

const oldNode = olderNodeHere() ?? olderNodeFetched();
if (!oldNode) {
  console.warn(`Skipping the older-Node.js checks of supported-node.mjs: no Node.js older than ${minimum} here or from the npm registry.`);
}
const oldVersion = oldNode ? spawnSync(oldNode, ['--version'], { encoding: 'utf8' }).stdout.trim().slice(1) : '';

const temporary: string[] = [];
function tempDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  temporary.push(dir);
  return dir;
}
afterEach(() => temporary.splice(0).forEach((dir) => rmSync(dir, { recursive: true, force: true })));

/** Runs the script; its own lines go to stderr and the command's to stdout, read apart (two pipes keep no order between them). */
async function run(node: string, args: string[], env: Record<string, string> = {}) {
  // The caller's whole environment, as npm's own (its registry, proxy and CA settings) reaches the fetch.
  const child = spawn(node, [SCRIPT, ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const [code, signal] = (await once(child, 'close')) as [number | null, NodeJS.Signals | null];
  return { code, signal, stdout, stderr };
}

describe('scripts/supported-node.mjs', () => {
  it('runs the command on this Node.js when it is supported, saying nothing, and exits with its code', async () => {
    expect(await run(process.execPath, ['node', '-p', 'process.execPath'])).toEqual({
      code: 0,
      signal: null,
      stdout: `${process.execPath}\n`,
      stderr: '',
    });
    expect((await run(process.execPath, ['node', '-e', 'process.exit(3)'])).code).toBe(3);
  });

  it('passes a signal sent to it on to the command, and ends as the command ends', async () => {
    const child = spawnProcess(
      process.execPath,
      [
        SCRIPT,
        'node',
        '-e',
        `process.on('SIGTERM', () => { console.log('command got SIGTERM'); process.exit(5); }); console.log('ready'); setInterval(() => {}, 1000);`,
      ],
      {},
    );
    await waitFor(async () => child.output().includes('ready'), 10_000, 'the command to start');
    child.child.kill('SIGTERM');
    expect(await child.exited).toBe(5);
    expect(child.output()).toBe('ready\ncommand got SIGTERM\n');

    // A command killed by a signal: it ends by the same signal.
    const killed = await run(process.execPath, ['node', '-e', `process.kill(process.pid, 'SIGKILL')`]);
    expect(killed).toMatchObject({ code: null, signal: 'SIGKILL' });
  });

  it('refuses, in one line naming both versions, when not even the Node.js it can fetch is new enough, and runs nothing', async () => {
    // A copy of the script beside a package.json asking for a Node.js that does not exist yet.
    const checkout = tempDir('supported-node-');
    mkdirSync(join(checkout, 'scripts'));
    copyFileSync(SCRIPT, join(checkout, 'scripts', 'supported-node.mjs'));
    writeFileSync(join(checkout, 'package.json'), JSON.stringify({ engines: { node: '>=99.0.0' } }));
    const marker = join(checkout, 'ran');
    const child = spawnProcess(process.execPath, [join(checkout, 'scripts', 'supported-node.mjs'), 'touch', marker], {});
    expect(await child.exited).toBe(1);
    expect(child.output()).toBe(
      `[supported-node] This service needs Node.js 99.0.0 or later; this is Node.js ${process.versions.node} (${process.execPath}). Install it, then run the command again.\n`,
    );
    expect(existsSync(marker)).toBe(false);
  });

  describe.skipIf(!oldNode)('on an older Node.js', () => {
    it(`fetches Node.js ${FALLBACK} from the npm registry once, then runs every command on it`, async () => {
      const cache = tempDir('supported-node-cache-');
      const target = join(cache, 'platform-service', `node-v${FALLBACK}-${process.platform}-${process.arch}`);
      const running = `[supported-node] Running on Node.js ${FALLBACK} from ${target}: this is Node.js ${oldVersion} (${oldNode}), older than the ${minimum} this service needs.\n`;

      const first = await run(oldNode!, ['node', '-p', 'process.version'], { XDG_CACHE_HOME: cache });
      expect(first.code, first.stderr).toBe(0);
      expect(first.stderr).toBe(
        `[supported-node] Fetching Node.js ${FALLBACK} from the npm registry (package node-${process.platform}-${process.arch}, about 30 MB) into ${target}; later runs reuse it.\n${running}`,
      );
      expect(first.stdout).toBe(`v${FALLBACK}\n`);
      // `node` on the command's PATH is the fetched one, so a command starting more Node.js processes (npm, vitest) keeps it.
      const second = await run(oldNode!, ['sh', '-c', 'command -v node'], { XDG_CACHE_HOME: cache });
      expect(second).toEqual({ code: 0, signal: null, stderr: running, stdout: `${join(target, 'bin', 'node')}\n` });

      const binDir = await run(oldNode!, ['--bin-dir'], { XDG_CACHE_HOME: cache });
      expect(binDir).toMatchObject({ stderr: running, stdout: `${join(target, 'bin')}\n` });
    }, 120_000);

    it("has the service's own entry points (api, worker, migrate) say what they need and stop, before a dependency fails to load", () => {
      for (const entry of ['dist/apps/api/src/main.js', 'dist/apps/worker/src/main.js', 'dist/libs/database/src/migrate.main.js']) {
        const started = spawnSync(oldNode!, [resolve(entry)], { encoding: 'utf8', env: { PATH: process.env.PATH } });
        expect(started.status, `${entry}: ${started.stderr}`).toBe(1);
        expect(started.stdout).toBe('');
        expect(started.stderr).toBe(
          `This service needs Node.js ${minimum} or later; this is Node.js ${oldVersion}. \`npm start\` fetches a supported one by itself; ` +
            'to run this entry point on it, put its directory first on PATH: PATH="$(node scripts/supported-node.mjs --bin-dir):$PATH" npm run <script>\n',
        );
      }
    });

    it('says in an image, which has no scripts/ to fetch a Node.js with, to run on a supported one', () => {
      const image = tempDir('supported-node-image-');
      const config = join(image, 'dist', 'libs', 'config', 'src');
      mkdirSync(config, { recursive: true });
      copyFileSync('package.json', join(image, 'package.json'));
      for (const file of ['supported-node.js', 'version.js']) {
        copyFileSync(join('dist', 'libs', 'config', 'src', file), join(config, file));
      }
      const started = spawnSync(oldNode!, [join(config, 'supported-node.js')], { encoding: 'utf8', env: { PATH: process.env.PATH } });
      expect(started.status, started.stderr).toBe(1);
      expect(started.stderr).toBe(
        `This service needs Node.js ${minimum} or later; this is Node.js ${oldVersion}. Run it on Node.js 22 LTS or 24 (an image built from a node:22 base has one).\n`,
      );
    });

    it('leaves svc to the older Node.js: the CLI runs on it as it is', async () => {
      const svc = (...args: string[]) => spawnSync(oldNode!, [resolve('bin/svc.js'), ...args], { encoding: 'utf8' });
      const help = svc('--help');
      expect(help.status, help.stderr).toBe(0);
      expect(help.stdout).toContain('tokens');
      const status = svc('status', '--url', 'http://127.0.0.1:1', '--json');
      expect(status.status, status.stderr).toBe(1);
      expect(JSON.parse(status.stdout)).toMatchObject({ error: expect.stringContaining('http://127.0.0.1:1') });
    });

    it('says in one line what failed and what to install when the registry cannot be reached, and runs nothing', async () => {
      const cache = tempDir('supported-node-cache-');
      const marker = join(cache, 'ran');
      const failed = await run(oldNode!, ['touch', marker], {
        XDG_CACHE_HOME: cache,
        // Nothing listens on port 1; an empty npm cache so that nothing is found there either.
        npm_config_registry: 'http://127.0.0.1:1/',
        npm_config_cache: join(cache, 'npm'),
        npm_config_fetch_retries: '0',
      });
      expect(failed.code).toBe(1);
      expect(failed.stderr.split('\n').at(-2)).toMatch(
        new RegExp(
          `^\\[supported-node\\] This service needs Node\\.js ${minimum.replaceAll('.', '\\.')} or later; this is Node\\.js [\\d.]+ \\(.+\\), and npm could not fetch node-${process.platform}-${process.arch}@${FALLBACK} \\(npm error .+\\)\\. Install Node\\.js ${minimum.replaceAll('.', '\\.')} or later \\(22 LTS or 24\\), then run the command again\\.$`,
        ),
      );
      expect(existsSync(marker)).toBe(false);
      expect(readdirSync(join(cache, 'platform-service'))).toEqual([]);
    }, 60_000);
  });
});
