// `npm start`: the whole service on one machine. Starts an embedded PostgreSQL
// (data kept in .data/) unless DATABASE_URL is set, applies migrations, then runs
// the api and the worker as child processes. Ctrl-C or SIGTERM stops everything.
import { execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

import { freePort, startEmbeddedPostgres } from './embedded-postgres.mjs';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const dataDir = resolve(process.env.PLATFORM_DATA_DIR ?? join(root, '.data'));
// .data/ is traversable (0711) so the unprivileged postgres user can reach its cluster;
// the key file and the database password file are owner-only.
const keyFile = join(dataDir, 'os-security-key');
const databasePasswordFile = join(dataDir, 'postgres-password');
const port = process.env.PORT ?? '7777';
const host = process.env.HOST ?? '127.0.0.1';

function say(message) {
  process.stdout.write(`[quickstart] ${message}\n`);
}

function ensureDataDir() {
  mkdirSync(dataDir, { recursive: true });
  chmodSync(dataDir, 0o711);
}

/** Generated once, kept owner-only in .data/, reused on every later start. */
function securityKey() {
  if (process.env.OS_SECURITY_KEY) {
    return { key: process.env.OS_SECURITY_KEY, source: 'the OS_SECURITY_KEY environment variable' };
  }
  ensureDataDir();
  if (!existsSync(keyFile)) {
    writeFileSync(keyFile, `${randomBytes(32).toString('base64url')}\n`, { mode: 0o600 });
    say(`Generated an OS security key in ${keyFile} (mode 0600)`);
  }
  chmodSync(keyFile, 0o600);
  return { key: readFileSync(keyFile, 'utf8').trim(), source: keyFile };
}

async function database() {
  if (process.env.DATABASE_URL) {
    return { url: process.env.DATABASE_URL, stop: async () => undefined };
  }
  const databaseDir = join(dataDir, 'postgres');
  const dbPort = Number(process.env.EMBEDDED_PG_PORT ?? (await freePort()));
  ensureDataDir();
  say(`Starting embedded PostgreSQL (data in ${databaseDir}, 127.0.0.1:${dbPort}, user postgres, password in ${databasePasswordFile})`);
  const db = await startEmbeddedPostgres({ databaseDir, port: dbPort, persistent: true, passwordFile: databasePasswordFile });
  return { url: db.url('postgres'), stop: () => db.stop() };
}

function newestSource(dir) {
  return readdirSync(dir, { withFileTypes: true }).reduce((newest, entry) => {
    const path = join(dir, entry.name);
    const mtime = entry.isDirectory() ? newestSource(path) : entry.name.endsWith('.ts') ? statSync(path).mtimeMs : 0;
    return Math.max(newest, mtime);
  }, 0);
}

/** Builds only when a source file is newer than the last build, so restarts are quick. */
function build() {
  const stamp = join(root, 'dist/apps/api/src/main.js');
  const sources = Math.max(newestSource(join(root, 'apps')), newestSource(join(root, 'libs')));
  if (existsSync(stamp) && statSync(stamp).mtimeMs >= sources) {
    return;
  }
  say('Building (tsc)');
  execFileSync(process.execPath, [join(root, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.build.json'], { cwd: root, stdio: 'inherit' });
  execFileSync(process.execPath, [join(root, 'node_modules/tsc-alias/dist/bin/index.js'), '-p', 'tsconfig.build.json'], { cwd: root, stdio: 'inherit' });
}

async function main() {
  build();
  const { key, source } = securityKey();
  const db = await database();
  const env = {
    ...process.env,
    DATABASE_URL: db.url,
    OS_SECURITY_KEY: key,
    HOST: host,
    PORT: port,
    MCP_ENABLED: process.env.MCP_ENABLED ?? 'true',
    DEMO_COMPONENTS: process.env.DEMO_COMPONENTS ?? 'true',
  };
  // Only the api checks credentials. The worker calls it with its own per-schedule credentials, and
  // migrations need only the database: neither gets the root key.
  const { OS_SECURITY_KEY: _rootKey, ...withoutKey } = env;
  const envs = { api: env, worker: withoutKey };
  execFileSync(process.execPath, [join(root, 'dist/libs/database/src/migrate.main.js')], { cwd: root, env: withoutKey, stdio: 'inherit' });

  let stopping = false;
  const children = ['api', 'worker'].map((app) => {
    const child = spawn(process.execPath, [join(root, `dist/apps/${app}/src/main.js`)], { cwd: root, env: envs[app], stdio: 'inherit' });
    child.on('exit', (code, signal) => {
      if (!stopping) {
        say(`${app} exited (${signal ?? code}); stopping everything`);
        void shutdown(1);
      }
    });
    return child;
  });

  async function shutdown(exitCode) {
    if (stopping) {
      return;
    }
    stopping = true;
    say('Stopping api and worker');
    await Promise.all(
      children.map(
        (child) =>
          new Promise((done) => {
            if (child.exitCode !== null || child.signalCode !== null) {
              return done();
            }
            child.once('exit', done);
            child.kill('SIGTERM');
            // The worker's own SIGTERM deadline is shorter than this.
            setTimeout(() => child.kill('SIGKILL'), 45_000).unref();
          }),
      ),
    );
    say('Stopping PostgreSQL');
    await db.stop();
    process.exit(exitCode);
  }
  // embedded-postgres (through async-exit-hook) stops PostgreSQL on SIGINT/SIGTERM and exits 130/143
  // by itself, racing this ordered stop (api and worker first, so the worker can still record its
  // drain, then PostgreSQL, then exit 0). The quickstart owns its shutdown: drop those listeners.
  for (const signal of ['SIGINT', 'SIGTERM']) {
    process.listeners(signal).forEach((listener) => process.removeListener(signal, listener));
  }
  process.on('SIGINT', () => void shutdown(0));
  process.on('SIGTERM', () => void shutdown(0));

  const url = `http://${host === '0.0.0.0' ? '127.0.0.1' : host}:${port}`;
  say(`API:      ${url}`);
  say(`Docs:     ${url}/docs`);
  say(`MCP:      ${url}/mcp`);
  say(`Admin credential (OS security key) is in ${source}. Use it as a bearer token, e.g.:`);
  say(`  curl -H "Authorization: Bearer $OS_SECURITY_KEY" ${url}/service-accounts   # OS_SECURITY_KEY=$(cat ${keyFile})`);
  say('Press Ctrl-C to stop.');
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
