import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

import { DCLinter } from 'dclint';
import { describe, expect, it } from 'vitest';

import { loadEnv } from '@app/config';

import { cliSandbox, runCli } from '../support/cli';
import { composeContainerEnv as containerEnv, interpolate, readEnvFile, readYaml } from '../support/deploy-files';

const TEMPLATE = 'templates/platform-docker';
const COMPOSE_FILE = `${TEMPLATE}/compose.yaml`;
const MOUNT = './components.mjs:/components/components.mjs:ro';

/** dclint with the repository's .dclintrc.yaml (the file itself disables only require-project-name-field). */
function lint(path: string): string[] {
  const linter = new DCLinter({ ...readYaml('.dclintrc.yaml'), quiet: false, debug: false, exclude: [] });
  const results: { messages: { rule: string }[] }[] = linter.lintFiles([path], false);
  return results.flatMap((result) => result.messages.map(({ rule }) => rule));
}

describe('the platform-docker template: compose.yaml', () => {
  const { services } = readYaml(COMPOSE_FILE);
  const deploy = readYaml('docker/compose.yaml').services;
  const filled = () => ({
    ...readEnvFile(`${TEMPLATE}/example.env`),
    POSTGRES_PASSWORD: randomBytes(24).toString('hex'),
    OS_SECURITY_KEY: randomBytes(32).toString('hex'),
    OPENAI_API_KEY: 'sk-test',
  });

  it('passes dclint, and dclint really checks it (a port on every interface fails)', () => {
    expect(lint(COMPOSE_FILE)).toEqual([]);
    const directory = mkdtempSync(join(tmpdir(), 'template-lint-'));
    try {
      writeFileSync(join(directory, 'compose.yaml'), readFileSync(COMPOSE_FILE, 'utf8').replace('"127.0.0.1:7777:7777"', '"7777:7777"'));
      expect(lint(join(directory, 'compose.yaml'))).toEqual(['no-unbound-port-interfaces']);
    } finally {
      rmSync(directory, { recursive: true, force: true });
    }
  });

  it('runs the platform image (IMAGE, default platform-service:local) without building it, one role per command', () => {
    for (const role of ['migrate', 'api', 'worker']) {
      expect(services[role].build, role).toBeUndefined();
      expect(services[role].command).toEqual([role]);
      expect(interpolate(services[role].image, {})).toBe('platform-service:local');
      expect(interpolate(services[role].image, { IMAGE: 'registry.example/platform:1.2' })).toBe('registry.example/platform:1.2');
    }
  });

  it('mounts components.mjs read-only into the api and the worker, and names it in COMPONENTS_MODULE', () => {
    for (const role of ['api', 'worker']) {
      expect(services[role].volumes, role).toEqual([MOUNT]);
      const env = containerEnv(services[role], filled());
      expect(env.COMPONENTS_MODULE).toBe(MOUNT.split(':')[1]);
      expect(services[role].extra_hosts).toEqual(['host.docker.internal:host-gateway']);
    }
    expect(services.migrate.volumes).toBeUndefined();
  });

  it("keeps the deploy compose file's database, ordering, ports, restarts and health checks", () => {
    // The same PostgreSQL service; only the message of the missing-password error names this project's .env.
    const withoutPassword = (db: any) => ({ ...db, environment: { ...db.environment, POSTGRES_PASSWORD: undefined } });
    expect(withoutPassword(services.db)).toEqual(withoutPassword(deploy.db));
    expect(services.db.environment.POSTGRES_PASSWORD).toBe(
      services.migrate.environment.DATABASE_URL.match(/(\$\{POSTGRES_PASSWORD[^}]*\})/)[1],
    );
    expect(services.migrate.depends_on).toEqual(deploy.migrate.depends_on);
    for (const role of ['api', 'worker']) {
      expect(services[role].depends_on, role).toEqual(deploy[role].depends_on);
      expect(services[role].healthcheck, role).toEqual(deploy[role].healthcheck);
      expect(services[role].environment.DB_MIGRATE).toBe('false');
    }
    expect(services.api.ports).toEqual(['127.0.0.1:7777:7777']);
    expect([services.db.restart, services.api.restart, services.worker.restart, services.migrate.restart]).toEqual([
      'unless-stopped',
      'unless-stopped',
      'unless-stopped',
      'no',
    ]);
    expect(services.worker.stop_grace_period).toBe(deploy.worker.stop_grace_period);
  });

  it('gives .env (and so the OS security key) to the api only; the worker gets its listed variables and the model key', () => {
    expect(services.api.env_file).toBe('.env');
    for (const role of ['migrate', 'worker']) {
      expect(services[role].env_file, role).toBeUndefined();
      const env = containerEnv(services[role], { ...filled(), JWT_SECRET: 'x'.repeat(40) });
      expect(env.OS_SECURITY_KEY, role).toBeUndefined();
      expect(env.JWT_SECRET, role).toBeUndefined();
    }
    // Every worker setting the deploy compose file passes, so schedules and the queue behave the same.
    expect(Object.keys(services.worker.environment)).toEqual(expect.arrayContaining(Object.keys(deploy.worker.environment)));
    expect(containerEnv(services.worker, filled()).OPENAI_API_KEY).toBe('sk-test');
    expect(containerEnv(services.api, filled()).OPENAI_API_KEY).toBe('sk-test');
  });

  it('will not start with the blank secrets of example.env', () => {
    const shipped = readEnvFile(`${TEMPLATE}/example.env`);
    expect(() => containerEnv(services.worker, shipped)).toThrow('POSTGRES_PASSWORD: set POSTGRES_PASSWORD in .env');
    const withPassword = { ...shipped, POSTGRES_PASSWORD: 'p'.repeat(48) };
    expect(() => containerEnv(services.api, withPassword)).toThrow('OS_SECURITY_KEY: set OS_SECURITY_KEY in .env');
  });

  it('gives every app container an environment the platform accepts once the secrets are filled in', () => {
    const variables = filled();
    for (const role of ['migrate', 'api', 'worker']) {
      const env = loadEnv(containerEnv(services[role], variables));
      expect(env.databaseUrl, role).toBe(`postgresql://platform:${variables.POSTGRES_PASSWORD}@db:5432/platform`);
    }
    const worker = loadEnv(containerEnv(services.worker, variables));
    expect([worker.WORKER_HEALTH_PORT, worker.publicUrl, worker.WORKER_CONCURRENCY]).toEqual([8081, 'http://api:7777', 10]);
    expect(loadEnv(containerEnv(services.api, variables)).OS_SECURITY_KEY).toBe(variables.OS_SECURITY_KEY);
  });

  it('`svc up` in a created project finds its compose.yaml in ./', async () => {
    const sandbox = cliSandbox();
    const created = await runCli(['create', 'stack', '--json'], sandbox);
    expect(created.code, created.stderr).toBe(0);
    const project = join(sandbox.cwd, 'stack');
    // An empty PATH: were svc to run docker for a dry run, it could not.
    const up = await runCli(['up', '--dry-run', '--json'], sandbox, { cwd: project, env: { PATH: join(sandbox.home, 'empty') } });
    expect(up.code, up.stderr).toBe(0);
    expect(up.json()).toEqual({
      command: ['docker', 'compose', '-f', join(project, 'compose.yaml'), 'up', '-d', '--build'],
      compose_file: join(project, 'compose.yaml'),
      dry_run: true,
    });
    expect(dirname(up.json().compose_file)).toBe(project);
  });
});
