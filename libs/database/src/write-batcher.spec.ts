import { describe, expect, it } from 'vitest';

import { WriteBatcher } from './write-batcher';

/** A write that records each statement's rows and answers them doubled, failing on the rows `refuse` names. */
function recorder(refuse: (rows: readonly number[]) => Error | null = () => null) {
  const statements: number[][] = [];
  let inFlight = 0;
  let mostInFlight = 0;
  const write = async (rows: readonly number[]) => {
    statements.push([...rows]);
    inFlight += 1;
    mostInFlight = Math.max(mostInFlight, inFlight);
    await new Promise((resolve) => setTimeout(resolve, 5));
    inFlight -= 1;
    const refused = refuse(rows);
    if (refused) {
      throw refused;
    }
    return rows.map((row) => row * 2);
  };
  return { write, statements, mostInFlight: () => mostInFlight };
}

describe('WriteBatcher', () => {
  it('writes rows submitted in one turn with one statement, and answers each its own result', async () => {
    const { write, statements } = recorder();
    const batcher = new WriteBatcher(write, { maxRows: 100, maxInFlight: 2 });

    await expect(Promise.all([1, 2, 3].map((row) => batcher.submit(row)))).resolves.toEqual([2, 4, 6]);
    expect(statements).toEqual([[1, 2, 3]]);
  });

  it('holds at most maxRows a statement and maxInFlight statements at once; rows submitted meanwhile go with the next', async () => {
    const { write, statements, mostInFlight } = recorder();
    const batcher = new WriteBatcher(write, { maxRows: 2, maxInFlight: 1 });

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

  it("writes a refused statement's rows again one by one, so that only the row at fault fails", async () => {
    const fault = new Error('duplicate key value violates unique constraint');
    const { write, statements } = recorder((rows) => (rows.includes(2) ? fault : null));
    const batcher = new WriteBatcher(write, { maxRows: 100, maxInFlight: 2 });

    const settled = await Promise.allSettled([1, 2, 3].map((row) => batcher.submit(row)));

    expect(settled).toEqual([
      { status: 'fulfilled', value: 2 },
      { status: 'rejected', reason: fault },
      { status: 'fulfilled', value: 6 },
    ]);
    expect(statements).toEqual([[1, 2, 3], [1], [2], [3]]);
  });

  it('fails every row at once when the database could not be reached, without writing them again', async () => {
    const unreachable = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });
    const { write, statements } = recorder(() => unreachable);
    const batcher = new WriteBatcher(write, { maxRows: 100, maxInFlight: 2 });

    const settled = await Promise.allSettled([1, 2].map((row) => batcher.submit(row)));

    expect(settled.map((result) => result.status)).toEqual(['rejected', 'rejected']);
    expect(statements).toEqual([[1, 2]]);
  });
});
