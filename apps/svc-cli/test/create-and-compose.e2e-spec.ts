import { execFileSync, spawn } from 'node:child_process';
import { chmodSync, cpSync, existsSync, mkdirSync, readdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

import { beforeAll, beforeEach, describe, expect, it } from 'vitest';

import { CliSandbox, cliSandbox, runCli, SVC_BIN } from '../../../test/support/cli';
import { gitHttpServer } from './git-http-server';

const TEMPLATES_DIR = resolve('templates');
const BUNDLED = ['platform-docker', 'platform-node'];
const UNBUNDLED = [
  'platform-aws',
  'platform-azure',
  'platform-fly',
  'platform-gcp',
  'platform-helm',
  'platform-modal',
  'platform-railway',
  'platform-render',
];
const BUNDLED_HINT = 'Bundled templates: platform-docker, platform-node; or use -u <git url>';

/** Every file under dir (relative paths, sorted), walking directories without following links. */
function filesUnder(dir: string): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((entry) => !entry.isDirectory())
    .map((entry) => relative(dir, join(entry.parentPath, entry.name)))
    .sort();
}

/**
 * An environment in which svc cannot reach git or the network: PATH holds only a fake `git` that
 * records being called and fails, and every proxy variable points at a closed port.
 */
function offlineEnv(sandbox: CliSandbox): { env: Record<string, string>; gitCalled: () => boolean } {
  const bin = join(sandbox.home, 'offline-bin');
  const marker = join(sandbox.home, 'git-was-called');
  mkdirSync(bin, { recursive: true });
  writeFileSync(join(bin, 'git'), `#!/bin/sh\necho "$@" >> "${marker}"\nexit 128\n`);
  chmodSync(join(bin, 'git'), 0o755);
  const deadProxy = 'http://127.0.0.1:9';
  return {
    env: {
      PATH: bin,
      http_proxy: deadProxy,
      https_proxy: deadProxy,
      HTTP_PROXY: deadProxy,
      HTTPS_PROXY: deadProxy,
      ALL_PROXY: deadProxy,
      GIT_PROXY_COMMAND: '/bin/false',
    },
    gitCalled: () => existsSync(marker),
  };
}

/** A fake git first on PATH that records its argv and hands over to the real one. */
function recordingGit(sandbox: CliSandbox): { env: Record<string, string>; argv: () => string } {
  const bin = join(sandbox.home, 'bin');
  const record = join(sandbox.home, 'git-argv');
  mkdirSync(bin);
  const realGit = execFileSync('which', ['git']).toString().trim();
  writeFileSync(join(bin, 'git'), `#!/bin/sh\necho "$@" >> "${record}"\nexec ${realGit} "$@"\n`);
  chmodSync(join(bin, 'git'), 0o755);
  return { env: { PATH: `${bin}:${process.env.PATH}` }, argv: () => readFileSync(record, 'utf8') };
}

/** A template repository as a real git repo with one commit, reachable over file://. */
function templateRepo(dir: string, files: Record<string, string>, links: Record<string, string> = {}): string {
  mkdirSync(dir, { recursive: true });
  for (const [name, content] of Object.entries(files)) {
    mkdirSync(join(dir, name, '..'), { recursive: true });
    writeFileSync(join(dir, name), content);
  }
  for (const [name, target] of Object.entries(links)) {
    symlinkSync(target, join(dir, name));
  }
  const git = (...args: string[]) =>
    execFileSync('git', args, {
      cwd: dir,
      stdio: 'pipe',
      env: {
        ...process.env,
        GIT_AUTHOR_NAME: 't',
        GIT_AUTHOR_EMAIL: 't@example.com',
        GIT_COMMITTER_NAME: 't',
        GIT_COMMITTER_EMAIL: 't@example.com',
      },
    });
  git('init', '-q', '-b', 'main');
  git('add', '-A');
  git('commit', '-q', '-m', 'template');
  git('commit', '-q', '--allow-empty', '-m', 'second commit: a shallow clone must not carry it');
  return `file://${dir}`;
}

describe('svc create', () => {
  let sandbox: CliSandbox;
  let repos: string;

  beforeAll(() => {
    const root = cliSandbox();
    repos = join(root.home, 'repos');
    templateRepo(join(repos, 'docker-starter'), {
      'example.env': 'OS_SECURITY_KEY=change-me\n',
      'compose.yaml': 'services: {}\n',
      'README.md': '# docker\n',
    });
    templateRepo(join(repos, 'fly-starter'), { 'fly.toml': 'app = "x"\n' });
    templateRepo(join(repos, 'linked-example'), { 'README.md': 'x\n' }, { 'example.env': '/etc/passwd' });
  });
  beforeEach(() => {
    sandbox = cliSandbox();
  });

  it.each(BUNDLED)('copies the bundled %s template with no git and no network, and seeds an owner-only .env', async (template) => {
    const offline = offlineEnv(sandbox);
    // platform-docker is the default: no -t.
    const args = template === 'platform-docker' ? ['create', 'my-app', '--json'] : ['create', 'my-app', '-t', template, '--json'];
    const run = await runCli(args, sandbox, { env: offline.env });
    expect(run.code, run.stdout + run.stderr).toBe(0);
    const path = join(sandbox.cwd, 'my-app');
    expect(run.json()).toEqual({ path, template });
    expect(offline.gitCalled()).toBe(false);

    const source = join(TEMPLATES_DIR, template);
    const expected = [
      '.gitignore',
      'README.md',
      'components.mjs',
      'example.env',
      ...(template === 'platform-docker' ? ['compose.yaml'] : []),
    ].sort();
    expect(filesUnder(source)).toEqual(expected);
    expect(filesUnder(path)).toEqual(['.env', ...expected].sort());
    for (const file of expected) {
      expect(readFileSync(join(path, file), 'utf8'), file).toBe(readFileSync(join(source, file), 'utf8'));
      expect(statSync(join(path, file)).mode & 0o111, `${file} is not executable`).toBe(0);
    }
    expect(readFileSync(join(path, '.env'), 'utf8')).toBe(readFileSync(join(path, 'example.env'), 'utf8'));
    expect(statSync(join(path, '.env')).mode & 0o777).toBe(0o600);
  });

  it("says what to run next, with this checkout's paths", async () => {
    const node = await runCli(['create', 'on-node', '-t', 'platform-node'], sandbox, { env: offlineEnv(sandbox).env });
    expect(node.code).toBe(0);
    expect(node.stdout).toContain('Wrote .env from example.env (owner-only); fill in its secrets.');
    expect(node.stdout).toContain(`cd ${process.cwd()} && COMPONENTS_MODULE=${join(sandbox.cwd, 'on-node', 'components.mjs')} npm start`);
    const docker = await runCli(['create', 'on-docker'], sandbox, { env: offlineEnv(sandbox).env });
    expect(docker.stdout).toContain(`cd ${process.cwd()} && docker build -t platform-service:local -f docker/Dockerfile .`);
    expect(docker.stdout).toContain('cd on-docker && svc up');
    // Started as npx starts it, the next step says npx svc: in a checkout a bare svc is not on the PATH.
    const throughNpx = await runCli(['create', 'by-npx'], sandbox, { env: { ...offlineEnv(sandbox).env, npm_lifecycle_event: 'npx' } });
    expect(throughNpx.stdout).toContain('cd by-npx && npx svc up');
  });

  // util-linux's script runs it on a pseudo-terminal, here one of no size: what a harness without a window makes.
  it.skipIf(!existsSync('/usr/bin/script'))(
    'ends on a terminal that reports no width, its progress as plain lines (a spinner there redrew forever)',
    async () => {
      const run = await new Promise<{ code: number | null; output: string }>((done, fail) => {
        const child = spawn(
          '/usr/bin/script',
          ['-qefc', `stty cols 0 rows 0; exec ${process.execPath} ${SVC_BIN} create sizeless`, '/dev/null'],
          {
            cwd: sandbox.cwd,
            env: (({ env }) => ({ ...env, PATH: `${env.PATH}:/usr/bin:/bin`, HOME: sandbox.home, TERM: 'xterm' }))(offlineEnv(sandbox)),
            stdio: ['ignore', 'pipe', 'pipe'],
          },
        );
        let output = '';
        child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
        const timer = setTimeout(
          () => (child.kill('SIGKILL'), fail(new Error(`svc create did not end:\n${output.slice(0, 2000)}`))),
          20_000,
        );
        child.on('close', (code) => (clearTimeout(timer), done({ code, output })));
      });
      expect(run.code, run.output).toBe(0);
      expect(run.output).toContain('Copying the platform-docker template...');
      expect(existsSync(join(sandbox.cwd, 'sizeless', 'compose.yaml'))).toBe(true);
    },
  );

  it.each(BUNDLED)(
    "%s: components.mjs exports the hello-agent that greets, counts the session's turns, emits and checkpoints",
    async (template) => {
      const run = await runCli(['create', 'agents', '-t', template, '--json'], sandbox, { env: offlineEnv(sandbox).env });
      expect(run.code).toBe(0);
      const file = join(sandbox.cwd, 'agents', 'components.mjs');
      const module = (await import(pathToFileURL(file).href)) as {
        default: (helpers: { modelAgent: (options: unknown) => unknown }) => unknown;
      };
      expect(typeof module.default).toBe('function');
      const components = (await module.default({
        modelAgent: () => expect.unreachable('the modelAgent examples are commented out'),
      })) as any[];
      expect(components.map(({ kind, id }) => ({ kind, id }))).toEqual([{ kind: 'agent', id: 'hello-agent' }]);
      const [hello] = components;
      expect(typeof hello.name).toBe('string');

      const emitted: string[] = [];
      let checkpoints = 0;
      const context = (history: { role: string; content: string }[]) => ({
        runId: 'run-1',
        sessionId: 'session-1',
        userId: null,
        message: 'Ada',
        history,
        signal: new AbortController().signal,
        checkpoint: async () => void (checkpoints += 1),
        emit: (delta: string) => void emitted.push(delta),
      });
      const first = await hello.run(context([]));
      expect(first).toBe('Hello, Ada! This is the start of the session.');
      expect(emitted.join('')).toBe(first);
      expect(checkpoints).toBe(1);
      emitted.length = 0;
      const later = await hello.run(
        context([
          { role: 'user', content: 'Ada' },
          { role: 'assistant', content: first },
        ]),
      );
      // A turn is a message and its answer.
      expect(later).toBe('Hello, Ada! This session has 1 earlier turn.');
      expect(emitted.join('')).toBe(later);
      const third = await hello.run(
        context([
          { role: 'user', content: 'Ada' },
          { role: 'assistant', content: first },
          { role: 'user', content: 'Ada' },
          { role: 'assistant', content: later },
        ]),
      );
      expect(third).toBe('Hello, Ada! This session has 2 earlier turns.');
      // A cancelled run stops at the checkpoint.
      await expect(hello.run({ ...context([]), checkpoint: async () => Promise.reject(new Error('cancelled')) })).rejects.toThrow(
        'cancelled',
      );

      // The model agents are there as commented-out examples, their key named by apiKeyEnv, never written in.
      const text = readFileSync(file, 'utf8');
      expect(text).toMatch(/^ {2}\/\/ modelAgent\(\{$/m);
      expect(text).toContain("//   apiKeyEnv: 'OPENAI_API_KEY',");
      expect(text).toContain(':11434/v1');
    },
  );

  it('an unbundled spec template exits 1 with the bundled ones as the hint, clones nothing and creates nothing', async () => {
    const offline = offlineEnv(sandbox);
    for (const template of UNBUNDLED) {
      const run = await runCli(['create', 'elsewhere', '-t', template, '--json'], sandbox, { env: offline.env });
      expect(run.code, template).toBe(1);
      expect(run.json()).toEqual({ error: `Template '${template}' is not bundled with this version of svc.`, hint: BUNDLED_HINT });
    }
    const human = await runCli(['create', 'elsewhere', '-t', 'platform-aws'], sandbox, { env: offline.env });
    expect(human.code).toBe(1);
    expect(human.stdout).toBe('');
    expect(human.stderr).toBe(`Error: Template 'platform-aws' is not bundled with this version of svc.\n${BUNDLED_HINT}\n`);
    expect(readdirSync(sandbox.cwd)).toEqual([]);
    expect(offline.gitCalled()).toBe(false);
  });

  it('-u clones shallowly, removes .git and seeds an owner-only .env', async () => {
    const git = recordingGit(sandbox);
    const repository = `file://${repos}/docker-starter`;
    const run = await runCli(['create', 'shallow', '-u', repository, '--json'], sandbox, { env: git.env });
    expect(run.code).toBe(0);
    const path = join(sandbox.cwd, 'shallow');
    expect(run.json()).toEqual({ path, template: repository });
    expect(git.argv()).toBe(`clone --depth 1 --quiet -- ${repository} ${path}\n`);
    expect(readFileSync(join(path, 'compose.yaml'), 'utf8')).toBe('services: {}\n');
    expect(existsSync(join(path, '.git'))).toBe(false);
    expect(readFileSync(join(path, '.env'), 'utf8')).toBe('OS_SECURITY_KEY=change-me\n');
    expect(statSync(join(path, '.env')).mode & 0o777).toBe(0o600);
  });

  it('-u with credentials in an http URL: git gets them in its environment, never its argv; svc prints the URL redacted', async () => {
    const served = join(sandbox.home, 'served');
    execFileSync('git', ['clone', '-q', '--bare', join(repos, 'docker-starter'), join(served, 'starter.git')]);
    const secret = 's3cret-Pa55';
    const server = await gitHttpServer(served, 'deploy', secret);
    try {
      const git = recordingGit(sandbox);
      const plainUrl = `${server.url}/starter.git`;
      const shownUrl = plainUrl.replace('http://', 'http://***@');
      const withCredentials = plainUrl.replace('http://', `http://deploy:${secret}@`);

      const human = await runCli(['create', 'private', '-u', withCredentials], sandbox, { env: git.env });
      expect(human.code).toBe(0);
      expect(existsSync(join(sandbox.cwd, 'private', 'compose.yaml'))).toBe(true);
      expect(server.authorizations).toContain(`Basic ${Buffer.from(`deploy:${secret}`).toString('base64')}`);
      expect(human.stderr).toContain(`Cloning ${shownUrl}...`);
      expect(human.stdout + human.stderr).not.toContain(secret);
      expect(git.argv()).toBe(`clone --depth 1 --quiet -- ${plainUrl} ${join(sandbox.cwd, 'private')}\n`);

      const json = await runCli(['create', 'private-json', '-u', withCredentials, '--json'], sandbox);
      expect(json.json()).toEqual({ path: join(sandbox.cwd, 'private-json'), template: shownUrl });
    } finally {
      await server.close();
    }
  });

  it("-u with a token as the user name of an http URL: git uses it as that URL's user name, never in argv or output", async () => {
    const served = join(sandbox.home, 'served');
    execFileSync('git', ['clone', '-q', '--bare', join(repos, 'docker-starter'), join(served, 'starter.git')]);
    // A git host that takes a token as the user name with any password (GitHub's `https://<token>@github.com/...`).
    const token = 'ghp_TokenAsUserName0123456789';
    const server = await gitHttpServer(served, token, 'x-oauth-basic');
    const askPass = join(sandbox.home, 'askpass.sh');
    writeFileSync(askPass, '#!/bin/sh\necho x-oauth-basic\n');
    chmodSync(askPass, 0o755);
    try {
      const git = recordingGit(sandbox);
      const plainUrl = `${server.url}/starter.git`;
      const run = await runCli(['create', 'by-token', '-u', plainUrl.replace('http://', `http://${token}@`)], sandbox, {
        env: { ...git.env, GIT_ASKPASS: askPass },
      });
      expect(run.code, run.stderr).toBe(0);
      expect(existsSync(join(sandbox.cwd, 'by-token', 'compose.yaml'))).toBe(true);
      expect(server.authorizations).toContain(`Basic ${Buffer.from(`${token}:x-oauth-basic`).toString('base64')}`);
      expect(run.stderr).toContain(`Cloning ${plainUrl.replace('http://', 'http://***@')}...`);
      expect(run.stdout + run.stderr).not.toContain(token);
      expect(git.argv()).not.toContain(token);
    } finally {
      await server.close();
    }
  });

  it('-u wins over -t (even an unbundled one); JSON template is the repository URL; no example.env, no .env', async () => {
    const custom = `file://${repos}/fly-starter`;
    const byUrl = await runCli(['create', 'custom', '-t', 'platform-fly', '-u', custom, '--json'], sandbox);
    expect(byUrl.json()).toEqual({ path: join(sandbox.cwd, 'custom'), template: custom });
    expect(existsSync(join(sandbox.cwd, 'custom', 'fly.toml'))).toBe(true);
    expect(existsSync(join(sandbox.cwd, 'custom', '.env'))).toBe(false);
  });

  it('-u needs git, and says so', async () => {
    const run = await runCli(['create', 'no-git', '-u', `file://${repos}/docker-starter`, '--json'], sandbox, {
      env: { PATH: join(sandbox.home, 'empty') },
    });
    expect(run.code).toBe(1);
    expect(run.json().error).toBe('git is required to create a project from a repository (-u): install git and re-run.');
    expect(existsSync(join(sandbox.cwd, 'no-git'))).toBe(false);
  });

  it('never overwrites: an existing directory is an error', async () => {
    mkdirSync(join(sandbox.cwd, 'taken'));
    writeFileSync(join(sandbox.cwd, 'taken', 'keep.txt'), 'mine\n');
    for (const args of [
      ['create', 'taken', '--json'],
      ['create', 'taken', '-u', `file://${repos}/docker-starter`, '--json'],
    ]) {
      const run = await runCli(args, sandbox);
      expect(run.code).toBe(1);
      expect(run.json().error).toBe(`${join(sandbox.cwd, 'taken')} already exists.`);
    }
    expect(readdirSync(join(sandbox.cwd, 'taken'))).toEqual(['keep.txt']);
  });

  it('requires a one-segment name of letters, digits, - and _ (a usage error: exit 2, stderr, no JSON)', async () => {
    for (const name of ['../escape', 'a/b', 'dot.name', 'sp ace', 'a'.repeat(101)]) {
      const run = await runCli(['create', name, '--json'], sandbox);
      expect(run.code).toBe(2);
      expect(run.stdout).toBe('');
      expect(run.stderr).toMatch(/^error: Invalid project name/);
    }
    expect(existsSync(join(sandbox.cwd, '..', 'escape'))).toBe(false);
  });

  it('requires the name in --json and non-TTY runs: a usage error (exit 2, stderr, no JSON)', async () => {
    for (const args of [['create', '--json'], ['create']]) {
      const run = await runCli(args, sandbox);
      expect(run.code).toBe(2);
      expect(run.stdout).toBe('');
      expect(run.stderr).toContain('error: A project name is required in non-interactive mode: svc create <name>');
    }
  });

  it('refuses a symlinked example.env in a cloned repository and leaves nothing behind', async () => {
    const run = await runCli(['create', 'linked', '-u', `file://${repos}/linked-example`, '--json'], sandbox);
    expect(run.code).toBe(1);
    expect(run.json().error).toMatch(/symbolic link/);
    expect(existsSync(join(sandbox.cwd, 'linked'))).toBe(false);
  });

  it('reports a failed clone with git stderr, and an unknown template as a usage error', async () => {
    const missing = await runCli(['create', 'nothing', '-u', `file://${repos}/does-not-exist`, '--json'], sandbox);
    expect(missing.code).toBe(1);
    expect(missing.json().error).toMatch(/^git clone failed: /);
    expect(existsSync(join(sandbox.cwd, 'nothing'))).toBe(false);
    const unknown = await runCli(['create', 'x', '-t', 'platform-mars', '--json'], sandbox);
    expect(unknown.code).toBe(2);
    expect(unknown.stdout).toBe('');
  });

  describe('a copy of svc in another checkout', () => {
    /** The built CLI copied elsewhere, beside its own templates/ folder: svc finds the templates next to its files. */
    function relocatedCheckout(templates: (dir: string) => void): string {
      const root = join(cliSandbox().home, 'checkout');
      mkdirSync(join(root, 'bin'), { recursive: true });
      writeFileSync(join(root, 'package.json'), JSON.stringify({ name: 'platform-service', version: '0.0.1' }));
      cpSync(resolve('bin/svc.js'), join(root, 'bin', 'svc.js'));
      cpSync(resolve('dist'), join(root, 'dist'), { recursive: true });
      symlinkSync(resolve('node_modules'), join(root, 'node_modules'));
      mkdirSync(join(root, 'templates'));
      templates(join(root, 'templates'));
      return join(root, 'bin', 'svc.js');
    }

    it('copies its own templates recursively, keeps an owner-executable bit, skips local .env files', async () => {
      const bin = relocatedCheckout((dir) => {
        mkdirSync(join(dir, 'platform-node', 'scripts', 'deep'), { recursive: true });
        writeFileSync(join(dir, 'platform-node', 'example.env'), 'A=1\n');
        writeFileSync(join(dir, 'platform-node', '.env'), 'SECRET=from-the-checkout\n');
        writeFileSync(join(dir, 'platform-node', 'scripts', 'deep', 'note.txt'), 'deep\n');
        writeFileSync(join(dir, 'platform-node', 'scripts', 'run.sh'), '#!/bin/sh\n', { mode: 0o775 });
        writeFileSync(join(dir, 'platform-node', 'scripts', 'group-writable.txt'), 'x\n', { mode: 0o666 });
      });
      const run = await runCli(['create', 'relocated', '-t', 'platform-node', '--json'], sandbox, { bin, env: offlineEnv(sandbox).env });
      expect(run.code, run.stdout + run.stderr).toBe(0);
      const path = join(sandbox.cwd, 'relocated');
      expect(filesUnder(path)).toEqual(['.env', 'example.env', 'scripts/deep/note.txt', 'scripts/group-writable.txt', 'scripts/run.sh']);
      expect(readFileSync(join(path, '.env'), 'utf8')).toBe('A=1\n');
      expect(readFileSync(join(path, 'scripts', 'deep', 'note.txt'), 'utf8')).toBe('deep\n');
      expect(statSync(join(path, 'scripts', 'run.sh')).mode & 0o7777).toBe(0o755 & ~process.umask());
      expect(statSync(join(path, 'scripts', 'group-writable.txt')).mode & 0o7777).toBe(0o644 & ~process.umask());
    });

    it('refuses a template holding a symbolic link and leaves nothing behind', async () => {
      const outside = join(sandbox.home, 'outside.txt');
      writeFileSync(outside, 'not part of any template\n');
      const bin = relocatedCheckout((dir) => {
        mkdirSync(join(dir, 'platform-docker', 'nested'), { recursive: true });
        writeFileSync(join(dir, 'platform-docker', 'README.md'), '# x\n');
        symlinkSync(outside, join(dir, 'platform-docker', 'nested', 'linked.txt'));
      });
      const run = await runCli(['create', 'linked', '--json'], sandbox, { bin });
      expect(run.code).toBe(1);
      expect(run.json()).toEqual({
        error: `Refusing to copy ${join(resolve(bin, '../..'), 'templates', 'platform-docker', 'nested', 'linked.txt')}: it is a symbolic link.`,
        hint: 'Templates hold only directories and regular files.',
      });
      expect(existsSync(join(sandbox.cwd, 'linked'))).toBe(false);
    });

    it('a bundled template missing from the installation is an error, not a clone', async () => {
      const bin = relocatedCheckout(() => undefined);
      const run = await runCli(['create', 'gone', '-t', 'platform-node', '--json'], sandbox, { bin, env: offlineEnv(sandbox).env });
      expect(run.code).toBe(1);
      expect(run.json()).toEqual({
        error: "The bundled template 'platform-node' is missing from this installation of svc.",
        hint: 'Run svc from a complete platform checkout, or use -u <git url>.',
      });
      expect(existsSync(join(sandbox.cwd, 'gone'))).toBe(false);
    });
  });
});

describe('svc up, down, restart', () => {
  let sandbox: CliSandbox;
  let fakePath: string;
  let argvLog: string;

  /**
   * A `docker` first on PATH with the Compose plugin: it answers `compose version` (svc asks first), and records every
   * other argv (and its working directory) and exits with $FAKE_DOCKER_EXIT.
   */
  beforeEach(() => {
    sandbox = cliSandbox();
    const bin = join(sandbox.home, 'bin');
    mkdirSync(bin);
    argvLog = join(sandbox.home, 'docker-argv');
    writeFileSync(
      join(bin, 'docker'),
      `#!/bin/sh\nif [ "$*" = "compose version" ]; then echo "Docker Compose version v2.30.3"; exit 0; fi\n` +
        `echo "$(pwd)|$(date +%s%N)|$*" >> "${argvLog}"\necho "compose says hi" >&2\nexit "\${FAKE_DOCKER_EXIT:-0}"\n`,
    );
    chmodSync(join(bin, 'docker'), 0o755);
    fakePath = `${bin}:${process.env.PATH}`;
  });

  const calls = () =>
    readFileSync(argvLog, 'utf8')
      .trim()
      .split('\n')
      .map((line) => {
        const [cwd, nanos, argv] = line.split('|');
        return { cwd, at: Number(BigInt(nanos) / 1_000_000n), argv };
      });

  it('up --dry-run prints the command and runs nothing', async () => {
    writeFileSync(join(sandbox.cwd, 'compose.yaml'), 'services: {}\n');
    const run = await runCli(['up', '-dr', '--json'], sandbox, { env: { PATH: fakePath } });
    expect(run.code).toBe(0);
    const composeFile = join(sandbox.cwd, 'compose.yaml');
    expect(run.json()).toEqual({
      command: ['docker', 'compose', '-f', composeFile, 'up', '-d', '--build'],
      compose_file: composeFile,
      dry_run: true,
    });
    expect(existsSync(argvLog)).toBe(false);
    const human = await runCli(['up', '--dry-run', '--pull'], sandbox, { env: { PATH: fakePath } });
    expect(human.stdout).toBe(`Would run: docker compose -f ${composeFile} up -d --build --pull always\n`);
  });

  it('finds the first of the four compose names in ./ then ./infra', async () => {
    mkdirSync(join(sandbox.cwd, 'infra'));
    writeFileSync(join(sandbox.cwd, 'infra', 'docker-compose.yml'), '');
    writeFileSync(join(sandbox.cwd, 'compose.yaml'), '');
    writeFileSync(join(sandbox.cwd, 'compose.yml'), '');
    expect((await runCli(['down', '-dr', '--json'], sandbox)).json().compose_file).toBe(join(sandbox.cwd, 'compose.yml'));
    writeFileSync(join(sandbox.cwd, 'docker-compose.yaml'), '');
    expect((await runCli(['down', '-dr', '--json'], sandbox)).json().compose_file).toBe(join(sandbox.cwd, 'docker-compose.yaml'));
    const onlyInfra = cliSandbox();
    mkdirSync(join(onlyInfra.cwd, 'infra'));
    writeFileSync(join(onlyInfra.cwd, 'infra', 'compose.yaml'), '');
    expect((await runCli(['down', '-dr', '--json'], onlyInfra)).json().compose_file).toBe(join(onlyInfra.cwd, 'infra', 'compose.yaml'));
  });

  it('up runs docker compose up -d --build (with --pull always) from the compose file directory', async () => {
    mkdirSync(join(sandbox.cwd, 'infra'));
    const composeFile = join(sandbox.cwd, 'infra', 'compose.yaml');
    writeFileSync(composeFile, '');
    const run = await runCli(['up', '-p', '--json'], sandbox, { env: { PATH: fakePath } });
    expect(run.code).toBe(0);
    expect(run.json()).toEqual({
      command: ['docker', 'compose', '-f', composeFile, 'up', '-d', '--build', '--pull', 'always'],
      compose_file: composeFile,
      dry_run: false,
    });
    expect(calls()).toEqual([
      { cwd: join(sandbox.cwd, 'infra'), at: expect.any(Number), argv: `compose -f ${composeFile} up -d --build --pull always` },
    ]);
  });

  it('down -v with -f removes volumes of the given file', async () => {
    mkdirSync(join(sandbox.cwd, 'deploy'));
    writeFileSync(join(sandbox.cwd, 'deploy', 'stack.yml'), '');
    const run = await runCli(['down', '-f', 'deploy/stack.yml', '-v', '--json'], sandbox, { env: { PATH: fakePath } });
    expect(run.code).toBe(0);
    expect(calls().map((call) => call.argv)).toEqual([`compose -f ${join(sandbox.cwd, 'deploy', 'stack.yml')} down --volumes`]);
  });

  it('restart runs down, waits 2 seconds, then up', async () => {
    const composeFile = join(sandbox.cwd, 'compose.yaml');
    writeFileSync(composeFile, '');
    const run = await runCli(['restart', '--json'], sandbox, { env: { PATH: fakePath } });
    expect(run.code).toBe(0);
    const down = { command: ['docker', 'compose', '-f', composeFile, 'down'], compose_file: composeFile, dry_run: false };
    const up = { command: ['docker', 'compose', '-f', composeFile, 'up', '-d', '--build'], compose_file: composeFile, dry_run: false };
    expect(run.json()).toEqual({ down, up, compose_file: composeFile, dry_run: false });
    const [first, second] = calls();
    expect([first.argv, second.argv]).toEqual([`compose -f ${composeFile} down`, `compose -f ${composeFile} up -d --build`]);
    expect(second.at - first.at).toBeGreaterThanOrEqual(1900);
  });

  it("docker never sees the CLI's credentials: an exported OS_SECURITY_KEY cannot override the project's .env", async () => {
    writeFileSync(join(sandbox.cwd, 'compose.yaml'), '');
    const bin = join(sandbox.home, 'env-docker');
    const seen = join(sandbox.home, 'docker-env');
    mkdirSync(bin);
    writeFileSync(
      join(bin, 'docker'),
      `#!/bin/sh\necho "\${OS_SECURITY_KEY-unset} \${SVC_ADMIN_TOKEN-unset} \${KEEP_ME-unset}" > "${seen}"\n`,
    );
    chmodSync(join(bin, 'docker'), 0o755);
    const run = await runCli(['up', '--json'], sandbox, {
      env: { PATH: `${bin}:${process.env.PATH}`, OS_SECURITY_KEY: 'other-instance-key', SVC_ADMIN_TOKEN: 'svc_pat_x', KEEP_ME: 'kept' },
    });
    expect(run.code).toBe(0);
    expect(readFileSync(seen, 'utf8')).toBe('unset unset kept\n');
  });

  it('a failing compose run exits 1 with its exit code and stderr', async () => {
    writeFileSync(join(sandbox.cwd, 'compose.yaml'), '');
    const run = await runCli(['up', '--json'], sandbox, { env: { PATH: fakePath, FAKE_DOCKER_EXIT: '17' } });
    expect(run.code).toBe(1);
    expect(run.json()).toEqual({ error: 'docker compose exited with code 17: compose says hi' });
  });

  it('a docker without the Compose plugin gets a hint to install it, not docker’s own flag error', async () => {
    writeFileSync(join(sandbox.cwd, 'compose.yaml'), '');
    const bin = join(sandbox.home, 'plain-docker');
    mkdirSync(bin);
    // What docker says without the plugin: `compose` is not a command, so `-f` is read as its own flag.
    writeFileSync(
      join(bin, 'docker'),
      `#!/bin/sh\nif [ "$2" = version ]; then echo "docker: 'compose' is not a docker command." >&2; else echo "unknown shorthand flag: 'f' in -f" >&2; fi\nexit 125\n`,
    );
    chmodSync(join(bin, 'docker'), 0o755);
    const run = await runCli(['up', '--json'], sandbox, { env: { PATH: `${bin}:${process.env.PATH}` } });
    expect(run.code).toBe(1);
    expect(run.json()).toEqual({
      error: expect.stringMatching(/Compose plugin is not/),
      hint: expect.stringMatching(/apt-get install docker-compose-plugin/),
    });
  });

  it('on a terminal, a docker without the Compose plugin prints the hint alone, without docker’s usage text', async () => {
    writeFileSync(join(sandbox.cwd, 'compose.yaml'), '');
    const bin = join(sandbox.home, 'plain-docker');
    mkdirSync(bin);
    const runs = join(sandbox.home, 'plain-docker-runs');
    // Without the plugin, `docker compose -f …` fails with docker's flag error and its whole usage text.
    writeFileSync(
      join(bin, 'docker'),
      `#!/bin/sh\nif [ "$2" = version ]; then echo "docker: 'compose' is not a docker command." >&2; exit 1; fi\n` +
        `echo "$*" >> "${runs}"\necho "unknown shorthand flag: 'f' in -f" >&2\necho "Usage:  docker [OPTIONS] COMMAND" >&2\nexit 125\n`,
    );
    chmodSync(join(bin, 'docker'), 0o755);
    const run = await runCli(['up'], sandbox, { env: { PATH: `${bin}:${process.env.PATH}` } });
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/Compose plugin is not/);
    expect(run.stderr).toMatch(/apt-get install docker-compose-plugin/);
    expect(`${run.stdout}${run.stderr}`).not.toMatch(/Usage:|unknown shorthand flag/);
    expect(existsSync(runs)).toBe(false);
  });

  it('missing compose files and a missing docker are errors, not crashes', async () => {
    const none = await runCli(['up', '--json'], sandbox, { env: { PATH: fakePath } });
    expect(none.code).toBe(1);
    expect(none.json()).toEqual({
      error: `No compose file found in ${sandbox.cwd} or ${join(sandbox.cwd, 'infra')}.`,
      hint: expect.any(String),
    });
    const named = await runCli(['down', '-f', 'nope.yml', '--json'], sandbox);
    expect(named.json().error).toBe(`Compose file not found: ${join(sandbox.cwd, 'nope.yml')}`);
    for (const file of ['', '.', sandbox.home, '/dev/null']) {
      const directory = await runCli(['up', '-f', file, '--dry-run', '--json'], sandbox);
      expect(directory.code, file).toBe(1);
      expect(directory.json(), file).toEqual({
        error: `Not a compose file: ${resolve(sandbox.cwd, file)} is not a file`,
        hint: 'Pass --file <compose file>, e.g. --file compose.yaml.',
      });
    }
    writeFileSync(join(sandbox.cwd, 'compose.yaml'), '');
    const noDocker = await runCli(['up', '--json'], sandbox, { env: { PATH: join(sandbox.home, 'empty') } });
    expect(noDocker.code).toBe(1);
    expect(noDocker.json().error).toMatch(/^docker is required/);
  });

  it('flags of another command are usage errors (exit 2)', async () => {
    writeFileSync(join(sandbox.cwd, 'compose.yaml'), '');
    for (const args of [
      ['up', '--volumes'],
      ['down', '--pull'],
      ['restart', '-v'],
    ]) {
      const run = await runCli([...args, '--json'], sandbox, { env: { PATH: fakePath } });
      expect(run.code, args.join(' ')).toBe(2);
      expect(run.stdout).toBe('');
    }
  });
});
