import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

import ignore from '@balena/dockerignore';
import { validate } from 'dockerfile-utils';
import { afterAll, describe, expect, it } from 'vitest';

import { createEmptyDatabase } from '../support/database';
import { dockerStages, entrypointCommands, packageScripts, Role, ROLE_SCRIPTS } from '../support/deploy-files';
import { call } from '../support/http';
import { testPort } from '../support/ports';
import { RunningProcess, spawnProcess, waitFor } from '../support/processes';

const dockerfile = readFileSync('docker/Dockerfile', 'utf8');

describe('docker/Dockerfile', () => {
  const stages = dockerStages(dockerfile);
  const runtime = stages.at(-1)!;
  const last = (keyword: string) => runtime.instructions.filter((instruction) => instruction.keyword === keyword).at(-1);

  it('passes the dockerfile-utils linter without a single diagnostic', () => {
    expect(validate(dockerfile)).toEqual([]);
    // The linter is live: a broken file does get diagnostics.
    expect(validate('FROM node:22\nCMD ["api"]\nCMD ["worker"]\nWORKDIR app\n').length).toBeGreaterThanOrEqual(2);
  });

  it('is multi-stage: the runtime stage takes dist/ from the build and node_modules from an --omit=dev install', () => {
    expect(stages.map((stage) => stage.name)).toEqual(['build', 'production-dependencies', 'runtime']);
    const copies = runtime.instructions.filter((instruction) => instruction.keyword === 'COPY' && instruction.flags.from);
    expect(copies.map((copy) => [copy.flags.from, ...copy.args])).toEqual([
      ['production-dependencies', '/app/node_modules', './node_modules'],
      ['build', '/app/dist', './dist'],
    ]);
    const install = stages[1].instructions.filter((instruction) => instruction.keyword === 'RUN').map((run) => run.args.join(' '));
    expect(install).toEqual([expect.stringMatching(/^npm ci --omit=dev --ignore-scripts /)]);
    expect(runtime.instructions.filter((instruction) => instruction.keyword === 'RUN')).toEqual([]);
  });

  it('listens on every interface of the container (api and worker health), in production mode', () => {
    expect(last('ENV')?.args).toEqual(['NODE_ENV=production', 'HOST=0.0.0.0']);
  });

  it('runs as a non-root user given by number (so Kubernetes runAsNonRoot can verify it)', () => {
    expect(last('USER')?.args).toEqual(['1000:1000']);
  });

  it('selects the role with its command: docker/entrypoint.sh, api by default', () => {
    expect(last('ENTRYPOINT')?.json).toEqual(['sh', '/app/docker/entrypoint.sh']);
    expect(last('CMD')?.json).toEqual(['api']);
    expect(runtime.instructions.find((instruction) => instruction.args.includes('./docker/entrypoint.sh'))?.args).toEqual([
      'docker/entrypoint.sh',
      './docker/entrypoint.sh',
    ]);
  });

  it('runs, for each role, exactly the package.json script of that role', () => {
    const scripts = packageScripts();
    const expected = Object.fromEntries(Object.entries(ROLE_SCRIPTS).map(([role, script]) => [role, scripts[script]]));
    expect(entrypointCommands()).toEqual(expected);
  });
});

describe('.dockerignore', () => {
  const context = ignore().add(readFileSync('.dockerignore', 'utf8'));
  const tracked = execFileSync('git', ['ls-files'], { encoding: 'utf8' }).trim().split('\n');
  const sent = new Set(context.filter(tracked));

  it('sends every file the build copies: manifests, tsconfigs, app and lib sources, the entry point', () => {
    const needed = tracked.filter(
      (path) =>
        ['package.json', 'package-lock.json', 'tsconfig.json', 'tsconfig.build.json', 'nest-cli.json', 'docker/entrypoint.sh'].includes(
          path,
        ) ||
        (/^(apps|libs)\/[^/]+\/src\//.test(path) && !/\.(spec|int-spec|e2e-spec)\.ts$/.test(path)),
    );
    expect(needed.length).toBeGreaterThan(30);
    expect(needed.filter((path) => !sent.has(path))).toEqual([]);
  });

  it('keeps secrets, local state, build output, tests and the rest out of the context', () => {
    const private_ = [
      '.env',
      'docker/.env',
      '.env.production',
      '.data/os-security-key',
      'node_modules/pg/package.json',
      'dist/apps/api/src/main.js',
      '.git/config',
    ];
    expect(context.filter(private_)).toEqual([]);
    const unneeded = [...sent].filter((path) => /(^|\/)(test|bench|scripts)\//.test(path) || /\.(spec|int-spec|e2e-spec)\.ts$/.test(path));
    expect(unneeded).toEqual([]);
  });
});

/** The image's roles, run outside Docker: the same entry point, the same built files. */
describe('docker/entrypoint.sh roles against a real PostgreSQL', () => {
  const started: RunningProcess[] = [];
  let databaseUrl: string;
  const run = (role: Role | 'bogus', env: Record<string, string> = {}) => {
    const child = spawnProcess('sh', ['docker/entrypoint.sh', role], { DATABASE_URL: databaseUrl, DB_MIGRATE: 'false', ...env });
    started.push(child);
    return child;
  };
  afterAll(async () => {
    await Promise.all(started.map((child) => child.stop('SIGKILL')));
  });

  it('migrate applies every migration to an empty database and exits 0', async () => {
    databaseUrl = await createEmptyDatabase();
    const migrate = run('migrate');
    expect(await migrate.exited).toBe(0);
    expect(migrate.output()).toContain('Applied migrations: CreateServiceAccounts');
  });

  it('api and worker start and report ready on the migrated database', async () => {
    const apiPort = await testPort();
    const healthPort = await testPort();
    const api = run('api', { PORT: String(apiPort) });
    const worker = run('worker', { WORKER_HEALTH_PORT: String(healthPort) });
    for (const [child, url] of [
      [api, `http://127.0.0.1:${apiPort}`],
      [worker, `http://127.0.0.1:${healthPort}`],
    ] as const) {
      await Promise.race([
        // Two boots on two cores shared with other test runs: 30 s has not always been enough.
        waitFor(async () => (await fetch(`${url}/readyz`)).ok, 60_000, `${url}/readyz`),
        child.exited.then((code) => {
          throw new Error(`exited with ${code}:\n${child.output()}`);
        }),
      ]);
      expect(await call(url, 'GET', '/readyz')).toMatchObject({ status: 200, body: { status: 'ok' } });
    }
  }, 150_000);

  it('refuses an unknown role with a usage line and exit 64', async () => {
    const bogus = run('bogus');
    expect(await bogus.exited).toBe(64);
    expect(bogus.output()).toContain('usage: entrypoint.sh api|worker|migrate (got: bogus)');
  });
});
