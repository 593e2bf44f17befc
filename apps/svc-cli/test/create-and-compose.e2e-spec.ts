import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { beforeAll, beforeEach, describe, expect, it } from 'vitest';

import { cliSandbox, CliSandbox, runCli } from '../../../test/support/cli';

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
  const git = (...args: string[]) => execFileSync('git', args, { cwd: dir, stdio: 'pipe', env: { ...process.env, GIT_AUTHOR_NAME: 't', GIT_AUTHOR_EMAIL: 't@example.com', GIT_COMMITTER_NAME: 't', GIT_COMMITTER_EMAIL: 't@example.com' } });
  git('init', '-q', '-b', 'main');
  git('add', '-A');
  git('commit', '-q', '-m', 'template');
  git('commit', '-q', '--allow-empty', '-m', 'second commit: a shallow clone must not carry it');
  return `file://${dir}`;
}

describe('svc create', () => {
  let sandbox: CliSandbox;
  let templates: string;

  beforeAll(() => {
    const root = cliSandbox();
    templates = join(root.home, 'templates');
    templateRepo(join(templates, 'platform-docker'), { 'example.env': 'OS_SECURITY_KEY=change-me\n', 'compose.yaml': 'services: {}\n', 'README.md': '# docker\n' });
    templateRepo(join(templates, 'platform-fly'), { 'fly.toml': 'app = "x"\n' });
    templateRepo(join(templates, 'linked-example'), { 'README.md': 'x\n' }, { 'example.env': '/etc/passwd' });
  });
  beforeEach(() => {
    sandbox = cliSandbox();
  });

  const env = () => ({ SVC_TEMPLATE_BASE_URL: `file://${templates}` });

  it('clones the default template shallowly, removes .git and seeds an owner-only .env', async () => {
    const run = await runCli(['create', 'my-app', '--json'], sandbox, { env: env() });
    expect(run.code).toBe(0);
    const path = join(sandbox.cwd, 'my-app');
    expect(run.json()).toEqual({ path, template: 'platform-docker' });
    expect(readFileSync(join(path, 'compose.yaml'), 'utf8')).toBe('services: {}\n');
    expect(existsSync(join(path, '.git'))).toBe(false);
    expect(readFileSync(join(path, '.env'), 'utf8')).toBe('OS_SECURITY_KEY=change-me\n');
    expect(statSync(join(path, '.env')).mode & 0o777).toBe(0o600);
  });

  it('clones with --depth 1 (the template history stays behind)', async () => {
    // A fake git first on PATH records its argv and hands over to the real one.
    const bin = join(sandbox.home, 'bin');
    mkdirSync(bin);
    const realGit = execFileSync('which', ['git']).toString().trim();
    writeFileSync(join(bin, 'git'), `#!/bin/sh\necho "$@" >> "${join(sandbox.home, 'git-argv')}"\nexec ${realGit} "$@"\n`);
    chmodSync(join(bin, 'git'), 0o755);
    const run = await runCli(['create', 'shallow', '--json'], sandbox, { env: { ...env(), PATH: `${bin}:${process.env.PATH}` } });
    expect(run.code).toBe(0);
    expect(readFileSync(join(sandbox.home, 'git-argv'), 'utf8')).toBe(`clone --depth 1 --quiet file://${templates}/platform-docker ${join(sandbox.cwd, 'shallow')}\n`);
  });

  it('takes -t and -u; JSON template is the template name or the repository URL', async () => {
    const fly = await runCli(['create', 'on-fly', '-t', 'platform-fly', '--json'], sandbox, { env: env() });
    expect(fly.json()).toEqual({ path: join(sandbox.cwd, 'on-fly'), template: 'platform-fly' });
    expect(existsSync(join(sandbox.cwd, 'on-fly', 'fly.toml'))).toBe(true);
    expect(existsSync(join(sandbox.cwd, 'on-fly', '.env'))).toBe(false);
    const custom = `file://${templates}/platform-docker`;
    const byUrl = await runCli(['create', 'custom', '-u', custom, '--json'], sandbox, { env: env() });
    expect(byUrl.json()).toEqual({ path: join(sandbox.cwd, 'custom'), template: custom });
  });

  it('never overwrites: an existing directory is an error', async () => {
    mkdirSync(join(sandbox.cwd, 'taken'));
    const run = await runCli(['create', 'taken', '--json'], sandbox, { env: env() });
    expect(run.code).toBe(1);
    expect(run.json().error).toBe(`${join(sandbox.cwd, 'taken')} already exists.`);
  });

  it('requires a one-segment name of letters, digits, - and _', async () => {
    for (const name of ['../escape', 'a/b', 'dot.name', 'sp ace']) {
      const run = await runCli(['create', name, '--json'], sandbox, { env: env() });
      expect(run.code).toBe(1);
      expect(run.json().error).toMatch(/^Invalid project name/);
    }
    expect(existsSync(join(sandbox.cwd, '..', 'escape'))).toBe(false);
  });

  it('requires the name in --json and non-TTY runs', async () => {
    for (const args of [['create', '--json'], ['create']]) {
      const run = await runCli(args, sandbox, { env: env() });
      expect(run.code).toBe(1);
      expect(args.includes('--json') ? run.json().error : run.stderr).toContain('A project name is required in non-interactive mode.');
    }
  });

  it('refuses a symlinked example.env and leaves nothing behind', async () => {
    const run = await runCli(['create', 'linked', '-u', `file://${templates}/linked-example`, '--json'], sandbox, { env: env() });
    expect(run.code).toBe(1);
    expect(run.json().error).toMatch(/symbolic link/);
    expect(existsSync(join(sandbox.cwd, 'linked'))).toBe(false);
  });

  it('reports a failed clone with git stderr, and an unknown template as a usage error', async () => {
    const missing = await runCli(['create', 'nothing', '-u', `file://${templates}/does-not-exist`, '--json'], sandbox, { env: env() });
    expect(missing.code).toBe(1);
    expect(missing.json().error).toMatch(/^git clone failed: /);
    expect(existsSync(join(sandbox.cwd, 'nothing'))).toBe(false);
    const unknown = await runCli(['create', 'x', '-t', 'platform-mars', '--json'], sandbox, { env: env() });
    expect(unknown.code).toBe(2);
    expect(unknown.stdout).toBe('');
  });
});

describe('svc up, down, restart', () => {
  let sandbox: CliSandbox;
  let fakePath: string;
  let argvLog: string;

  /** A `docker` first on PATH that records each argv (and its working directory) and exits with $FAKE_DOCKER_EXIT. */
  beforeEach(() => {
    sandbox = cliSandbox();
    const bin = join(sandbox.home, 'bin');
    mkdirSync(bin);
    argvLog = join(sandbox.home, 'docker-argv');
    writeFileSync(join(bin, 'docker'), `#!/bin/sh\necho "$(pwd)|$(date +%s%N)|$*" >> "${argvLog}"\necho "compose says hi" >&2\nexit "\${FAKE_DOCKER_EXIT:-0}"\n`);
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
    expect(run.json()).toEqual({ command: ['docker', 'compose', '-f', composeFile, 'up', '-d', '--build'], compose_file: composeFile, dry_run: true });
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
    expect(run.json()).toEqual({ command: ['docker', 'compose', '-f', composeFile, 'up', '-d', '--build', '--pull', 'always'], compose_file: composeFile, dry_run: false });
    expect(calls()).toEqual([{ cwd: join(sandbox.cwd, 'infra'), at: expect.any(Number), argv: `compose -f ${composeFile} up -d --build --pull always` }]);
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
    expect(run.json()).toEqual({ error: expect.stringMatching(/Compose plugin is not/), hint: expect.stringMatching(/apt-get install docker-compose-plugin/) });
  });

  it('missing compose files and a missing docker are errors, not crashes', async () => {
    const none = await runCli(['up', '--json'], sandbox, { env: { PATH: fakePath } });
    expect(none.code).toBe(1);
    expect(none.json()).toEqual({ error: `No compose file found in ${sandbox.cwd} or ${join(sandbox.cwd, 'infra')}.`, hint: expect.any(String) });
    const named = await runCli(['down', '-f', 'nope.yml', '--json'], sandbox);
    expect(named.json().error).toBe(`Compose file not found: ${join(sandbox.cwd, 'nope.yml')}`);
    writeFileSync(join(sandbox.cwd, 'compose.yaml'), '');
    const noDocker = await runCli(['up', '--json'], sandbox, { env: { PATH: join(sandbox.home, 'empty') } });
    expect(noDocker.code).toBe(1);
    expect(noDocker.json().error).toMatch(/^docker is required/);
  });

  it('flags of another command are usage errors (exit 2)', async () => {
    writeFileSync(join(sandbox.cwd, 'compose.yaml'), '');
    for (const args of [['up', '--volumes'], ['down', '--pull'], ['restart', '-v']]) {
      const run = await runCli([...args, '--json'], sandbox, { env: { PATH: fakePath } });
      expect(run.code, args.join(' ')).toBe(2);
      expect(run.stdout).toBe('');
    }
  });
});
