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

/** An engine's own pool of `max` connections, each set up by `setUp` (when given) before its first query. */
export function enginePool(connectionString: string, max: number, setUp?: (client: ClientBase) => Promise<void>): Pool {
  // pg-pool awaits onConnect, and drops a connection where it fails; its typings say it returns nothing.
  // eslint-disable-next-line @typescript-eslint/no-misused-promises
  return new Pool({ connectionString, max, Client: ConnectionClient, onConnect: setUp });
}

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
  /** Run on each of the pool's connections before its first query (what the store's statements rely on). */
  setUpConnection?: (client: ClientBase) => Promise<void>;
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

  private async launch({ connections, setUpConnection, store, ...options }: EngineOptions<Work>): Promise<void> {
    const connectionString = this.env.databaseUrl;
    this.pool = enginePool(connectionString, connections, setUpConnection);
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
