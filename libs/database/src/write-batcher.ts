import { isDatabaseUnavailable } from './database-errors';

export interface WriteBatcherLimits {
  /** Rows one statement writes at most. */
  maxRows: number;
  /** Statements in flight at once; rows submitted meanwhile wait and go with the next. */
  maxInFlight: number;
}

interface Waiting<Row, Result> {
  row: Row;
  resolve: (result: Result) => void;
  reject: (error: unknown) => void;
}

/**
 * Group commit: rows submitted in the same event-loop turn (or while earlier statements are still in
 * flight) are written by one statement, so under load PostgreSQL's cost per statement and per commit is
 * shared by the rows; alone, a row is written at once. `write` answers one result per row, in order.
 * A statement that fails is written again row by row, so that one row's error (a unique violation, a
 * value no column holds) is its own caller's only; one that could not reach the database is not.
 */
export class WriteBatcher<Row, Result> {
  private waiting: Waiting<Row, Result>[] = [];
  private inFlight = 0;
  private flushScheduled = false;

  constructor(
    private readonly write: (rows: readonly Row[]) => Promise<Result[]>,
    private readonly limits: WriteBatcherLimits,
  ) {}

  submit(row: Row): Promise<Result> {
    return new Promise((resolve, reject) => {
      this.waiting.push({ row, resolve, reject });
      this.scheduleFlush();
    });
  }

  private scheduleFlush(): void {
    if (!this.flushScheduled && this.waiting.length > 0 && this.inFlight < this.limits.maxInFlight) {
      this.flushScheduled = true;
      // After the turn's I/O callbacks: every request read in this turn joins the statement.
      setImmediate(() => this.flush());
    }
  }

  private flush(): void {
    this.flushScheduled = false;
    while (this.waiting.length > 0 && this.inFlight < this.limits.maxInFlight) {
      const batch = this.waiting.splice(0, this.limits.maxRows);
      this.inFlight += 1;
      void this.writeBatch(batch).finally(() => {
        this.inFlight -= 1;
        this.scheduleFlush();
      });
    }
  }

  private async writeBatch(batch: Waiting<Row, Result>[]): Promise<void> {
    try {
      const results = await this.write(batch.map(({ row }) => row));
      batch.forEach(({ resolve }, index) => resolve(results[index]));
    } catch (error) {
      if (batch.length === 1 || isDatabaseUnavailable(error)) {
        batch.forEach(({ reject }) => reject(error));
        return;
      }
      await Promise.all(batch.map((waiting) => this.writeBatch([waiting])));
    }
  }
}
