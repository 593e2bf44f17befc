import { DatabaseBusyError } from './database-errors';

export interface WriteBatcherOptions<Row> {
  /** Rows one statement writes at most. */
  maxRows: number;
  /** Statements in flight at once; rows submitted meanwhile wait and go with the next. */
  maxInFlight: number;
  /** How long a row waits for its statement to be sent before it fails with DatabaseBusyError, as a request waiting for a pool connection does. */
  maxWaitMs: number;
  /** Rows that share a key never go in one statement (one waits for the next): a statement that wrote one row twice would fail. */
  keysOf?: (row: Row) => readonly string[];
}

interface Waiting<Row, Result> {
  row: Row;
  since: number;
  resolve: (result: Result) => void;
  reject: (error: unknown) => void;
}

/** SQLSTATE classes of errors one row of a statement can cause: cardinality, data and integrity violations, and a deadlock. */
const ROW_ERROR = /^(21|22|23|40P01)/;

/**
 * Group commit: rows submitted in the same event-loop turn (or while earlier statements are still in
 * flight) are written by one statement, so under load PostgreSQL's cost per statement and per commit is
 * shared by the rows; alone, a row is written at once. `write` answers one result per row, in order.
 * A statement refused over one of its rows (a unique violation, a value no column holds) is written
 * again row by row, one after another, so that the error is that row's caller's only; any other error
 * (the database unreachable, a timeout) fails every row of the statement.
 */
export class WriteBatcher<Row, Result> {
  private waiting: Waiting<Row, Result>[] = [];
  private inFlight = 0;
  private flushScheduled = false;
  private expiry: NodeJS.Timeout | null = null;

  constructor(
    private readonly write: (rows: readonly Row[]) => Promise<Result[]>,
    private readonly options: WriteBatcherOptions<Row>,
  ) {}

  submit(row: Row): Promise<Result> {
    return new Promise((resolve, reject) => {
      this.waiting.push({ row, since: Date.now(), resolve, reject });
      this.scheduleFlush();
      this.expiry ??= setTimeout(() => this.expire(), this.options.maxWaitMs).unref();
    });
  }

  private scheduleFlush(): void {
    if (!this.flushScheduled && this.waiting.length > 0 && this.inFlight < this.options.maxInFlight) {
      this.flushScheduled = true;
      // After the turn's I/O callbacks: every request read in this turn joins the statement.
      setImmediate(() => this.flush());
    }
  }

  private flush(): void {
    this.flushScheduled = false;
    while (this.waiting.length > 0 && this.inFlight < this.options.maxInFlight) {
      const batch = this.take();
      this.inFlight += 1;
      void this.writeBatch(batch).finally(() => {
        this.inFlight -= 1;
        this.scheduleFlush();
      });
    }
  }

  /** The next statement's rows, oldest first: up to maxRows, none sharing a key with one taken before it. */
  private take(): Waiting<Row, Result>[] {
    const { maxRows, keysOf } = this.options;
    if (!keysOf) {
      return this.waiting.splice(0, maxRows);
    }
    const taken = new Set<string>();
    const batch: Waiting<Row, Result>[] = [];
    const left: Waiting<Row, Result>[] = [];
    for (const waiting of this.waiting) {
      const keys = keysOf(waiting.row);
      if (batch.length < maxRows && !keys.some((key) => taken.has(key))) {
        keys.forEach((key) => taken.add(key));
        batch.push(waiting);
      } else {
        left.push(waiting);
      }
    }
    this.waiting = left;
    return batch;
  }

  private async writeBatch(batch: Waiting<Row, Result>[]): Promise<void> {
    try {
      const results = await this.write(batch.map(({ row }) => row));
      batch.forEach(({ resolve }, index) => resolve(results[index]));
    } catch (error) {
      if (batch.length === 1 || !ROW_ERROR.test((error as { code?: string }).code ?? '')) {
        batch.forEach(({ reject }) => reject(error));
        return;
      }
      for (const waiting of batch) {
        await this.writeBatch([waiting]);
      }
    }
  }

  /** Fails the rows that waited maxWaitMs (their statements could not be sent: the earlier ones are stuck), and looks again at the next one's deadline. */
  private expire(): void {
    const now = Date.now();
    // Rows wait in the order they came, so those past their deadline are the first ones.
    const due = this.waiting.findIndex(({ since }) => now - since < this.options.maxWaitMs);
    const expired = this.waiting.splice(0, due === -1 ? this.waiting.length : due);
    expired.forEach(({ reject }) => reject(new DatabaseBusyError(`No statement could be sent within ${this.options.maxWaitMs} ms`)));
    this.expiry =
      this.waiting.length === 0 ? null : setTimeout(() => this.expire(), this.waiting[0].since + this.options.maxWaitMs - now).unref();
  }
}
