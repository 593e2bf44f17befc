import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';

import { BeforeApplicationShutdown, OnModuleDestroy } from '@nestjs/common';
import { ClientBase, Pool } from 'pg';

import { Env } from '@app/config';
import { ConnectionClient } from '@app/database';
import { DatabaseHealth, Liveness, MetricsRegistry } from '@app/health';

import { ClaimedJob, HeldWork } from './job-handler';
import { QueueWorker, QueueWorkerOptions } from './queue-worker';
import { listeningGauge } from './queue-worker-metrics';
import { WorkStore } from './work-store';

/**
 * What an engine's pool sets on each connection before its first use. Every statement an engine runs finds
 * its rows through an index, and the claim is a prepared statement whose plan is kept: one made while
 * `queue_jobs` looked empty (a new deployment) could read the whole table to find the rows it had locked,
 * and would go on doing so once the table held a million jobs. With table scans ruled out, a plan is made
 * of index and row-id reads whatever the statistics said when it was made (a table no index serves is
 * still scanned). A SET rather than a startup option, which poolers such as PgBouncer refuse; the pool awaits
 * it (its typings say the hook returns nothing) and drops a connection where it fails.
 */
export const ENGINE_POOL = {
  onConnect: async (client: ClientBase): Promise<void> => {
    await client.query('SET enable_seqscan = off');
  },
};

/** The dedicated connection a queue engine LISTENs on. */
export async function connectListener(connectionString: string): Promise<ConnectionClient> {
  const client = new ConnectionClient({ connectionString });
  await client.connect();
  return client;
}

/** `host:pid:random`: unique per engine, and readable in `locked_by` (the host cut to fit the column). */
export function newWorkerId(maxHostChars = 80): string {
  return `${hostname().slice(0, maxHostChars)}:${process.pid}:${randomBytes(3).toString('hex')}`;
}

export type EngineOptions<Work extends HeldWork> = Omit<QueueWorkerOptions<Work>, 'pool' | 'store' | 'connectListener' | 'onListening'> & {
  /** Size of the engine's own pool. */
  connections: number;
  store: (pool: Pool) => WorkStore<Work>;
};

/**
 * One queue engine inside the worker app (the job queue's, or the schedule fires'): its own pool and
 * LISTEN connection, started by the subclass at bootstrap, or once the database is migrated when it is
 * not yet (bootstrap goes on meanwhile, so the health probes answer). Shutdown starts in onModuleDestroy,
 * for every engine at once, so they all drain within one WORKER_SHUTDOWN_TIMEOUT_SECONDS rather than one
 * after the other; the pool closes once its engine has stopped.
 */
export abstract class QueueEngineHost<Work extends HeldWork = ClaimedJob> implements OnModuleDestroy, BeforeApplicationShutdown {
  protected engine: QueueWorker<Work> | null = null;
  private pool: Pool | null = null;
  private stopped: Promise<void> | null = null;
  private stopping = false;

  /**
   * @param name what the worker's /livez calls this engine when its database calls hang: past the lock
   * grace, other workers have swept what it holds, and only a restart mends a connection that never answers.
   */
  protected constructor(
    name: string,
    protected readonly env: Env,
    private readonly database: DatabaseHealth,
    private readonly registry: MetricsRegistry,
    liveness: Liveness,
  ) {
    liveness.add(() => {
      const stalledSeconds = Math.floor((this.engine?.stalledMs() ?? 0) / 1000);
      return stalledSeconds > env.QUEUE_LOCK_GRACE_SECONDS
        ? `${name}: a database call has waited ${stalledSeconds} s for an answer, past QUEUE_LOCK_GRACE_SECONDS (${env.QUEUE_LOCK_GRACE_SECONDS})`
        : null;
    });
  }

  protected async startEngine(options: EngineOptions<Work>): Promise<void> {
    if (await this.database.wasMigratedAtStart()) {
      await this.launch(options);
      return;
    }
    void this.database
      .whenMigrated()
      .then(() => (this.stopping ? undefined : this.launch(options)))
      .catch((error: unknown) => {
        // As a failed boot would: the process ends, and its supervisor starts it again.
        options.logger.fatal({ err: error }, 'The queue engine could not start');
        process.exit(1);
      });
  }

  private async launch({ connections, store, ...options }: EngineOptions<Work>): Promise<void> {
    const connectionString = this.env.databaseUrl;
    this.pool = new Pool({ ...ENGINE_POOL, connectionString, max: connections, Client: ConnectionClient });
    const workStore = store(this.pool);
    const listening = listeningGauge(this.registry).labels({ channel: workStore.readyChannel });
    listening.set(0);
    this.engine = new QueueWorker<Work>({
      ...options,
      pool: this.pool,
      store: workStore,
      connectListener: () => connectListener(connectionString),
      onListening: (up) => listening.set(up ? 1 : 0),
    });
    await this.engine.start();
  }

  onModuleDestroy(): void {
    this.stopping = true;
    this.stopped = this.engine?.stop(this.env.WORKER_SHUTDOWN_TIMEOUT_SECONDS * 1000) ?? null;
  }

  async beforeApplicationShutdown(): Promise<void> {
    await this.stopped;
    await this.pool?.end();
  }
}
