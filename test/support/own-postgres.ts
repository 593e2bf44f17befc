import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { startEmbeddedPostgres } from '../../scripts/embedded-postgres.mjs';
import { testPort } from './ports';
import { alive, waitFor } from './processes';

type Cluster = Awaited<ReturnType<typeof startEmbeddedPostgres>>;

/**
 * A PostgreSQL cluster of one test file's own, migrated, which the file may crash (SIGKILL of the postmaster: crash
 * recovery at the next start, not a clean restart) and start again on the same data and port, while the rest of the
 * suite keeps its database.
 */
export class OwnPostgres {
  private readonly dir = mkdtempSync(join(tmpdir(), 'platform-own-pg-'));
  private readonly options = { databaseDir: join(this.dir, 'data'), passwordFile: join(this.dir, 'password'), port: 0 };
  private cluster: Cluster | null = null;
  url = '';

  /** Starts the cluster: the first time on a free port, with the migrations applied; later on the same data and port. */
  async start(): Promise<void> {
    const first = this.options.port === 0;
    if (first) {
      this.options.port = await testPort();
    }
    this.cluster = await startEmbeddedPostgres(this.options);
    this.url = this.cluster.url();
    if (first) {
      execFileSync(process.execPath, ['dist/libs/database/src/migrate.main.js'], { env: { ...process.env, DATABASE_URL: this.url } });
    }
  }

  /** Kills the postmaster with SIGKILL and waits until it is gone (its backends notice and exit; only then may it start again). */
  async crash(): Promise<void> {
    const postmaster = this.cluster!.pid()!;
    process.kill(postmaster, 'SIGKILL');
    await waitFor(async () => !alive(postmaster), 10_000, 'the postmaster to die');
  }

  /** Stops it, if it runs, and removes its data. */
  async remove(): Promise<void> {
    await this.cluster?.stop().catch(() => undefined);
    rmSync(this.dir, { recursive: true, force: true });
  }
}
