import { describe, expect, it } from 'vitest';

import { DatabaseBusyError } from './database-errors';
import { WriteBatcher, WriteBatcherOptions } from './write-batcher';

const sqlError = (code: string) => Object.assign(new Error(`refused (${code})`), { code });

/** A write that records each statement's rows and answers them doubled, failing with what `refuse` gives for its rows. */
function recorder(refuse: (rows: readonly number[]) => Error | null = () => null, { hold = () => Promise.resolve() } = {}) {
  const statements: number[][] = [];
  let inFlight = 0;
  let mostInFlight = 0;
  const write = async (rows: readonly number[]) => {
    statements.push([...rows]);
    inFlight += 1;
    mostInFlight = Math.max(mostInFlight, inFlight);
    await new Promise((resolve) => setTimeout(resolve, 5));
    await hold();
    inFlight -= 1;
    const refused = refuse(rows);
    if (refused) {
      throw refused;
    }
    return rows.map((row) => row * 2);
  };
  return { write, statements, mostInFlight: () => mostInFlight };
}

const options = (overrides: Partial<WriteBatcherOptions<number>> = {}): WriteBatcherOptions<number> => ({
  maxRows: 100,
  maxInFlight: 2,
  maxWaitMs: 5_000,
  ...overrides,
});

describe('WriteBatcher', () => {
  it('writes rows submitted in one turn with one statement, and answers each its own result', async () => {
    const { write, statements } = recorder();
    const batcher = new WriteBatcher(write, options());

    await expect(Promise.all([1, 2, 3].map((row) => batcher.submit(row)))).resolves.toEqual([2, 4, 6]);
    expect(statements).toEqual([[1, 2, 3]]);
  });

  it('holds at most maxRows a statement and maxInFlight statements at once; rows submitted meanwhile go with the next', async () => {
    const { write, statements, mostInFlight } = recorder();
    const batcher = new WriteBatcher(write, options({ maxRows: 2, maxInFlight: 1 }));

    const first = Promise.all([1, 2, 3].map((row) => batcher.submit(row)));
    await new Promise((resolve) => setImmediate(resolve));
    const later = Promise.all([4, 5].map((row) => batcher.submit(row)));

    await expect(Promise.all([first, later])).resolves.toEqual([
      [2, 4, 6],
      [8, 10],
    ]);
    expect(statements).toEqual([[1, 2], [3, 4], [5]]);
    expect(mostInFlight()).toBe(1);
  });

  it('never puts two rows sharing a key in one statement: the second waits for the next, in its turn', async () => {
    const { write, statements } = recorder();
    const batcher = new WriteBatcher(write, options({ keysOf: (row) => [`parity:${row % 2}`, ...(row > 3 ? ['big'] : [])] }));

    await expect(Promise.all([1, 2, 3, 4, 5].map((row) => batcher.submit(row)))).resolves.toEqual([2, 4, 6, 8, 10]);
    expect(statements).toEqual([[1, 2], [3, 4], [5]]);
  });

  it("writes a statement refused over one row's data again row by row, one after another, so that only that row fails", async () => {
    const fault = sqlError('23505');
    const { write, statements, mostInFlight } = recorder((rows) => (rows.includes(2) ? fault : null));
    const batcher = new WriteBatcher(write, options());

    const settled = await Promise.allSettled([1, 2, 3].map((row) => batcher.submit(row)));

    expect(settled).toEqual([
      { status: 'fulfilled', value: 2 },
      { status: 'rejected', reason: fault },
      { status: 'fulfilled', value: 6 },
    ]);
    expect(statements).toEqual([[1, 2, 3], [1], [2], [3]]);
    expect(mostInFlight()).toBe(1);
  });

  it.each([
    ['the database could not be reached', Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' })],
    ['the statement was cancelled by a timeout', sqlError('57014')],
    ['a lock could not be had', sqlError('55P03')],
  ])('fails every row of the statement at once when %s, without writing them again', async (_, error) => {
    const { write, statements } = recorder(() => error);
    const batcher = new WriteBatcher(write, options());

    const settled = await Promise.allSettled([1, 2].map((row) => batcher.submit(row)));

    expect(settled).toEqual([
      { status: 'rejected', reason: error },
      { status: 'rejected', reason: error },
    ]);
    expect(statements).toEqual([[1, 2]]);
  });

  it('fails a row that waited maxWaitMs behind stuck statements with DatabaseBusyError; the stuck ones still finish', async () => {
    let release!: () => void;
    const stuck = new Promise<void>((resolve) => (release = resolve));
    const { write, statements } = recorder(() => null, { hold: () => stuck });
    const batcher = new WriteBatcher(write, options({ maxInFlight: 1, maxWaitMs: 50 }));

    const first = batcher.submit(1);
    await new Promise((resolve) => setImmediate(resolve));
    const started = Date.now();
    await expect(batcher.submit(2)).rejects.toBeInstanceOf(DatabaseBusyError);
    expect(Date.now() - started).toBeGreaterThanOrEqual(45);

    release();
    await expect(first).resolves.toBe(2);
    expect(statements).toEqual([[1]]);
  });
});
