import { Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';

import { Env } from '@app/config';
import { DatabaseHealth } from '@app/health';

const RETENTION_INTERVAL_MS = 10 * 60_000;

/**
 * Deletes traces older than QUEUE_RETENTION_SECONDS, on the same clock as the queue's terminal jobs; 0
 * keeps them. A trace's summary and spans are on its run's row, which stays: they are cleared.
 */
@Injectable()
export class TraceRetention implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly log = new Logger('TraceRetention');
  private timer: NodeJS.Timeout | null = null;
  private stopped = false;

  constructor(
    private readonly env: Env,
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly database: DatabaseHealth,
  ) {}

  onApplicationBootstrap(): void {
    if (this.env.QUEUE_RETENTION_SECONDS > 0) {
      // Once the migrate role has run: on a first deploy the tables do not exist yet (an error and a stack, before).
      void this.database.whenMigrated().then(() => {
        if (this.stopped) {
          return;
        }
        this.timer = setInterval(() => void this.deleteExpired(), RETENTION_INTERVAL_MS);
        this.timer.unref();
        void this.deleteExpired();
      });
    }
  }

  onApplicationShutdown(): void {
    this.stopped = true;
    if (this.timer) {
      clearInterval(this.timer);
    }
  }

  async deleteExpired(): Promise<void> {
    try {
      // Span batches (stored before runs kept their spans) go by their own age.
      await this.dataSource.query(
        `WITH expired AS (
           UPDATE runs SET trace_id = NULL, request_span = NULL, spans = NULL
            WHERE trace_id IS NOT NULL AND created_at < now() - make_interval(secs => $1)
         )
         DELETE FROM trace_spans WHERE started_at < now() - make_interval(secs => $1)`,
        [this.env.QUEUE_RETENTION_SECONDS],
      );
    } catch (error) {
      this.log.error({ err: error }, 'trace retention cleanup failed');
    }
  }
}
