import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

import { describe, expect, it } from 'vitest';

import { cliSandbox, runCli } from '../../../test/support/cli';

const pkg = JSON.parse(readFileSync('package.json', 'utf8')) as { version: string; bin: Record<string, string> };

describe('svc entry points', () => {
  const sandbox = cliSandbox();

  it('bare svc prints the command catalog and exits 0', async () => {
    const run = await runCli([], sandbox);
    expect(run.code).toBe(0);
    for (const command of [
      'create',
      'connect',
      'disconnect',
      'status',
      'up',
      'down',
      'restart',
      'tokens create',
      'tokens list',
      'tokens revoke',
      'tokens rotate',
      'jobs list',
      'jobs get',
      'jobs stats',
      'jobs requeue',
      'jobs cancel',
      'schedules list',
      'schedules get',
      'schedules runs',
      'schedules trigger',
      'schedules pause',
      'schedules resume',
    ]) {
      expect(run.stdout).toContain(`  ${command}`);
    }
    expect(run.stderr).toBe('');
    // Read in an 80-column terminal without a line wrapping.
    for (const line of run.stdout.split('\n')) {
      expect(line.length, line).toBeLessThanOrEqual(80);
    }
  });

  it('svc --help and svc -h print the same catalog as bare svc', async () => {
    const catalog = (await runCli([], sandbox)).stdout;
    for (const flag of ['--help', '-h']) {
      const run = await runCli([flag], sandbox);
      expect(run).toMatchObject({ code: 0, stdout: catalog, stderr: '' });
    }
  });

  it('--version prints the package version', async () => {
    const run = await runCli(['--version'], sandbox);
    expect(run).toMatchObject({ code: 0, stdout: `${pkg.version}\n`, stderr: '' });
  });

  it("the command tree loads only the client side of the shared libraries, not the api's OpenAPI layer or configuration", () => {
    // @app/errors' DTOs load @nestjs/swagger, and @app/config's index the service's env validation: a quarter of
    // every command's start-up, for nothing the CLI uses.
    const listLoaded = `require('reflect-metadata');
      require('./dist/apps/svc-cli/src/cli.module.js');
      console.log(Object.keys(require.cache).filter((f) => f.includes('/dist/libs/')).map((f) => f.split('/dist/libs/')[1]).join('\\n'));`;
    const loaded = execFileSync(process.execPath, ['-e', listLoaded], { encoding: 'utf8' }).trim().split('\n');
    expect(new Set(loaded.map((file) => file.split('/')[0]))).toEqual(
      new Set(['access', 'cli-project', 'cli-terminal', 'client-adapters', 'config', 'svc-client']),
    );
    expect(loaded.filter((file) => /^(access|config)\//.test(file)).sort()).toEqual([
      'access/src/principal.js',
      'access/src/scope.js',
      'config/src/loopback.js',
      'config/src/version.js',
    ]);
  });

  it('svc and svcctl are the same app', () => {
    expect(pkg.bin).toEqual({ svc: 'bin/svc.js', svcctl: 'bin/svc.js' });
  });

  it('--help of a command exits 0 and lists its flags', async () => {
    const run = await runCli(['connect', '--help'], sandbox);
    expect(run.code).toBe(0);
    for (const flag of [
      '--url',
      '--clients',
      '--name',
      '-s, --scopes',
      '--expires',
      '--privileged',
      '--pat',
      '--server-name',
      '--project',
      '--rotate',
      '--skip-existing',
      '--allow-http',
      '-y, --yes',
      '--json',
    ]) {
      expect(run.stdout).toContain(flag);
    }
  });

  it('svc jobs --help and svc schedules --help list their subcommands; requeue --help its flags', async () => {
    const jobs = await runCli(['jobs', '--help'], sandbox);
    expect(jobs.code).toBe(0);
    for (const command of ['list', 'get', 'stats', 'requeue']) {
      expect(jobs.stdout).toMatch(new RegExp(`^  ${command} `, 'm'));
    }
    const schedules = await runCli(['schedules', '--help'], sandbox);
    expect(schedules.code).toBe(0);
    for (const command of ['list', 'get', 'runs', 'trigger', 'pause', 'resume']) {
      expect(schedules.stdout).toMatch(new RegExp(`^  ${command} `, 'm'));
    }
    const requeue = await runCli(['jobs', 'requeue', '--help'], sandbox);
    expect(requeue.code).toBe(0);
    for (const flag of [
      '--status',
      '--component',
      '--since',
      '--limit',
      '--dry-run',
      '--force',
      '--clear-cancellation',
      '-y, --yes',
      '--url',
      '--allow-http',
      '--json',
    ]) {
      expect(requeue.stdout).toContain(flag);
    }
    expect(requeue.stdout).toContain('Exit 3 when only some');
  });

  it("an unknown subcommand of a group names it and lists the group's commands (exit 2)", async () => {
    for (const [group, commands] of [
      ['schedules', ['list', 'get', 'runs', 'trigger', 'pause', 'resume']],
      ['jobs', ['list', 'get', 'stats', 'requeue']],
      ['tokens', ['create', 'list', 'revoke', 'rotate']],
    ] as const) {
      const run = await runCli([group, 'launch', 'x'], sandbox);
      expect(run.code).toBe(2);
      expect(run.stdout).toBe('');
      expect(run.stderr).toContain(`error: unknown command '${group} launch'`);
      for (const command of commands) {
        expect(run.stderr).toMatch(new RegExp(`^  ${command} `, 'm'));
      }
      // A mistyped command followed by its options is still named as the mistake, not the option.
      const typo = await runCli([group, 'lst', '--status', 'failed', '--json'], sandbox);
      expect(typo.code).toBe(2);
      expect(typo.stdout).toBe('');
      expect(typo.stderr).toContain(`error: unknown command '${group} lst'`);
    }
    // An option before any command says the command comes first.
    const option = await runCli(['jobs', '--status', 'failed'], sandbox);
    expect(option.code).toBe(2);
    expect(option.stderr).toContain("error: unknown option '--status' (svc jobs takes a command first)");
  });

  it('unknown commands, unknown options, missing and malformed values exit 2 on stderr without JSON', async () => {
    for (const args of [
      ['launch'],
      ['status', '--verbose', '--json'],
      ['connect', '--clients'],
      ['disconnect', '--url'],
      ['create', 'a', 'b', '--json'],
      ['tokens', 'list', '--url', 'notaurl', '--json'],
      ['jobs', 'stats', '--url', 'ftp://127.0.0.1:7777', '--json'],
      ['connect', '--clients', 'code-agent-a', '--name', 'Shared_Bad', '--json'],
    ]) {
      const run = await runCli(args, sandbox);
      expect(run.code, `${args.join(' ')}\n${run.stderr}`).toBe(2);
      expect(run.stdout).toBe('');
      expect(run.stderr).toMatch(/error/i);
    }
    // An unknown command says where the commands are listed.
    expect((await runCli(['launch'], sandbox)).stderr).toBe("error: unknown command 'launch'\n(svc --help lists the commands)\n");
    // -dr is --dry-run of up, down and restart only; elsewhere the error names what was typed.
    const elsewhere = await runCli(['tokens', 'list', '-dr'], sandbox);
    expect(elsewhere.code).toBe(2);
    expect(elsewhere.stderr).toContain("unknown option '-dr'");
  });
});
