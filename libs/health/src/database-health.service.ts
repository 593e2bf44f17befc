import { setTimeout as sleep } from 'node:timers/promises';

import { Injectable, Logger, OnApplicationShutdown } from '@nestjs/common';
import { Pool } from 'pg';
import { DataSource } from 'typeorm';

import { ConnectionClient } from '@app/database';

/** Below the probes' 3 s timeoutSeconds, so a hung database reads as "not ready", not as a failed probe. */
export const DATABASE_PING_TIMEOUT_MS = 2000;

export type DatabaseState = 'ok' | 'unreachable' | 'migrations_pending';

/** The 503 detail for each way of not being ready; api and worker say the same thing. */
export const NOT_READY_DETAIL: Record<Exclude<DatabaseState, 'ok'>, string> = {
  unreachable: 'Not ready: the database is unreachable',
  migrations_pending: 'Not ready: database migrations are pending (run npm run migrate: the migrate role in the image)',
};

const UNDEFINED_TABLE = '42P01';

/** How often a process waiting for the migrate role looks again. */
const MIGRATED_POLL_MS = 2000;

/**
 * What api and worker readiness both mean: PostgreSQL answers, and every migration this build
 * knows is applied. Deployments run with DB_MIGRATE=false and a separate migrate job, so a new
 * pod must not take traffic or claim jobs before that job has finished.
 *
 * Asked over a connection of its own, not the app's pool: a pool busy with requests waiting on the
 * database (a spike, a table lock) is load, not an unreachable database, and failing readiness for it
 * would take every replica out of the Service at once, at the peak.
 */
@Injectable()
export class DatabaseHealth implements OnApplicationShutdown {
  private readonly logger = new Logger('Database');
  private stateAtStart: Promise<DatabaseState> | null = null;
  private migrated: Promise<void> | null = null;
  private readonly probes: Pool;

  constructor(private readonly dataSource: DataSource) {
    this.probes = new Pool({
      connectionString: (dataSource.options as { url?: string }).url,
      max: 1,
      // Kept open between probes: opening one per probe would cost the database a backend each time.
      idleTimeoutMillis: 0,
      connectionTimeoutMillis: DATABASE_PING_TIMEOUT_MS,
      // A probe stuck on a stalled database gives its connection back rather than holding it for the next probe.
      query_timeout: DATABASE_PING_TIMEOUT_MS,
      Client: ConnectionClient,
    });
    // A probe connection the database drops is replaced by the next probe.
    this.probes.on('error', () => undefined);
  }

  async onApplicationShutdown(): Promise<void> {
    await this.probes.end();
  }

  /**
   * Resolves once every migration this build knows is applied: the worker's loops (jobs, schedule fires,
   * the schedule tick) start only then, so a worker that is not ready claims and fires nothing.
   */
  whenMigrated(): Promise<void> {
    this.migrated ??= this.untilMigrated();
    return this.migrated;
  }

  /** Whether every migration was applied when the process first asked: one query however many loops ask. */
  async wasMigratedAtStart(): Promise<boolean> {
    return (await this.firstState()) === 'ok';
  }

  private firstState(): Promise<DatabaseState> {
    this.stateAtStart ??= this.check();
    return this.stateAtStart;
  }

  private async untilMigrated(): Promise<void> {
    let state = await this.firstState();
    if (state === 'ok') {
      return;
    }
    this.logger.warn(`${NOT_READY_DETAIL[state]}: no job is claimed and no schedule fired until it is ready`);
    while (state !== 'ok') {
      // Unref'd: a process stopping meanwhile is not held up by the wait.
      await sleep(MIGRATED_POLL_MS, undefined, { ref: false });
      state = await this.check();
    }
    this.logger.log('Database ready: claiming jobs and firing schedules');
  }

  async check(timeoutMs = DATABASE_PING_TIMEOUT_MS): Promise<DatabaseState> {
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<DatabaseState>((resolve) => {
      timer = setTimeout(() => resolve('unreachable'), timeoutMs);
    });
    try {
      return await Promise.race([this.probe(), deadline]);
    } finally {
      clearTimeout(timer);
    }
  }

  private async probe(): Promise<DatabaseState> {
    const table = this.dataSource.options.migrationsTableName ?? 'migrations';
    let rows: { name: string }[];
    try {
      ({ rows } = await this.probes.query<{ name: string }>(`SELECT name FROM "${table}"`));
    } catch (error) {
      return (error as { code?: string }).code === UNDEFINED_TABLE ? 'migrations_pending' : 'unreachable';
    }
    const applied = new Set(rows.map((row) => row.name));
    const known = this.dataSource.migrations.map((migration) => migration.name ?? migration.constructor.name);
    return known.every((name) => applied.has(name)) ? 'ok' : 'migrations_pending';
  }
}
