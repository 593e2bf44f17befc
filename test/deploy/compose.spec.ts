import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { DCLinter } from 'dclint';
import { describe, expect, it } from 'vitest';

import { loadEnv } from '@app/config';

import { composeContainerEnv as containerEnv, readEnvFile, readYaml } from '../support/deploy-files';

const COMPOSE_FILE = 'docker/compose.yaml';

/** dclint with the repository's .dclintrc.yaml: the same check as `npx dclint docker/compose.yaml`. */
function lint(path: string): { rule: string; message: string }[] {
  const linter = new DCLinter({ ...readYaml('.dclintrc.yaml'), quiet: false, debug: false, exclude: [] });
  // dclint's declaration files use extensionless ESM imports, so under nodenext its result type is lost.
  const results: { messages: { rule: string; message: string }[] }[] = linter.lintFiles([path], false);
  return results.flatMap((result) => result.messages.map(({ rule, message }) => ({ rule, message })));
}

describe('docker/compose.yaml', () => {
  const compose = readYaml(COMPOSE_FILE);
  const { services } = compose;

  it('passes dclint: the Compose Specification schema and its best-practice rules', () => {
    expect(lint(COMPOSE_FILE)).toEqual([]);
  });

  it('is checked for real: dclint rejects an unknown key, and a port published on every interface', () => {
    const original = readFileSync(COMPOSE_FILE, 'utf8');
    const directory = mkdtempSync(join(tmpdir(), 'compose-lint-'));
    const lintVariant = (name: string, text: string) => {
      writeFileSync(join(directory, name), text);
      return lint(join(directory, name)).map((message) => message.rule);
    };
    try {
      expect(lintVariant('typo.yaml', original.replace('    depends_on: *after-migrations', '    depend_on: *after-migrations'))).toEqual([
        'invalid-schema',
      ]);
      expect(lintVariant('unbound.yaml', original.replace('"127.0.0.1:7777:7777"', '"7777:7777"'))).toEqual(['no-unbound-port-interfaces']);
    } finally {
      rmSync(directory, { recursive: true, force: true });
    }
  });

  it('refers only to services and volumes it defines', () => {
    for (const [name, service] of Object.entries<any>(services)) {
      for (const dependency of Object.keys(service.depends_on ?? {})) {
        expect(Object.keys(services), `${name} depends on ${dependency}`).toContain(dependency);
      }
      for (const volume of service.volumes ?? []) {
        expect(Object.keys(compose.volumes), `${name} mounts ${volume}`).toContain(volume.split(':')[0]);
      }
    }
  });

  it('runs PostgreSQL on a named volume with a healthcheck', () => {
    expect(services.db.image).toMatch(/^postgres:\d+/);
    expect(services.db.volumes).toEqual(['pgdata:/var/lib/postgresql']);
    expect(services.db.healthcheck.test).toEqual(['CMD-SHELL', 'pg_isready -U platform -d platform']);
  });

  it('builds one image and selects each role by its command', () => {
    for (const role of ['migrate', 'api', 'worker']) {
      expect(services[role]).toMatchObject({
        build: { context: '..', dockerfile: 'docker/Dockerfile' },
        image: 'platform-service:local',
        command: [role],
      });
    }
  });

  it('migrates once, after the database is healthy; api and worker start only after both', () => {
    expect(services.migrate.depends_on).toEqual({ db: { condition: 'service_healthy' } });
    for (const role of ['api', 'worker']) {
      expect(services[role].depends_on).toEqual({
        db: { condition: 'service_healthy' },
        migrate: { condition: 'service_completed_successfully' },
      });
      expect(services[role].environment.DB_MIGRATE).toBe('false');
      expect(services[role].healthcheck.test.join(' ')).toContain('/readyz');
    }
  });

  it('restarts the long-running services but not the one-shot migration', () => {
    expect([services.db.restart, services.api.restart, services.worker.restart, services.migrate.restart]).toEqual([
      'unless-stopped',
      'unless-stopped',
      'unless-stopped',
      'no',
    ]);
  });

  it('serves the api on 7777 on every container interface, published on the host loopback, with MCP on unless .env turns it off', () => {
    expect(services.api.ports).toEqual(['127.0.0.1:7777:7777']);
    expect(services.api.environment).toMatchObject({ HOST: '0.0.0.0', PORT: '7777', MCP_ENABLED: '${MCP_ENABLED:-true}' });
  });

  it('gives the worker time to drain its jobs before SIGKILL', () => {
    const drainSeconds = Number(services.worker.environment.WORKER_SHUTDOWN_TIMEOUT_SECONDS);
    // Kept equal to the service's default, so the grace period moves with it.
    expect(drainSeconds).toBe(loadEnv({}).WORKER_SHUTDOWN_TIMEOUT_SECONDS);
    expect(Number.parseInt(services.worker.stop_grace_period, 10)).toBeGreaterThanOrEqual(drainSeconds + 5);
  });

  it("gives the api time to let its own runs finish and answer before docker's SIGKILL (10 s by default)", () => {
    const graceSeconds = services.api.stop_grace_period ? Number.parseInt(services.api.stop_grace_period, 10) : 10;
    // API_SHUTDOWN_TIMEOUT_SECONDS, then up to 3 s for the cancelled runs to answer, with room to spare.
    expect(graceSeconds).toBeGreaterThanOrEqual(loadEnv({}).API_SHUTDOWN_TIMEOUT_SECONDS + 3 + 1);
  });

  it('will not start with the blank secrets of example.env', () => {
    const shipped = readEnvFile('docker/example.env');
    expect(() => containerEnv(services.worker, shipped)).toThrow('POSTGRES_PASSWORD: set POSTGRES_PASSWORD in docker/.env');
    const withPassword = { ...shipped, POSTGRES_PASSWORD: randomBytes(24).toString('hex') };
    expect(() => containerEnv(services.api, withPassword)).toThrow('OS_SECURITY_KEY: set OS_SECURITY_KEY in docker/.env');
  });

  it('gives every app container an environment the service accepts once the secrets are filled in', () => {
    const variables = {
      ...readEnvFile('docker/example.env'),
      POSTGRES_PASSWORD: randomBytes(24).toString('hex'),
      OS_SECURITY_KEY: randomBytes(32).toString('hex'),
    };
    for (const role of ['migrate', 'api', 'worker']) {
      const env = loadEnv(containerEnv(services[role], variables));
      expect(env.databaseUrl, role).toBe(`postgresql://platform:${variables.POSTGRES_PASSWORD}@db:5432/platform`);
    }
    const worker = loadEnv(containerEnv(services.worker, variables));
    expect([worker.WORKER_HEALTH_PORT, worker.publicUrl]).toEqual([8081, 'http://api:7777']);
    expect(services.worker.healthcheck.test.join(' ')).toContain(`127.0.0.1:${worker.WORKER_HEALTH_PORT}/readyz`);
    expect(loadEnv(containerEnv(services.api, variables)).OS_SECURITY_KEY).toBe(variables.OS_SECURITY_KEY);
    // Settings of .env that the worker needs as much as the api: its spans must reach the same collector.
    const exporting = { ...variables, OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318', LOG_FORMAT: 'json', TRACES_ENABLED: 'false' };
    expect(loadEnv(containerEnv(services.worker, exporting))).toMatchObject({
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318',
      LOG_FORMAT: 'json',
      TRACES_ENABLED: false,
    });
    // The worker and the migration never get it: test/security/deploy-secrets.spec.ts.
    expect(services.api.env_file).toBe('.env');
  });
});
