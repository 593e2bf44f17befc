import { DatabaseError, type Pool, type QueryResult, type QueryResultRow } from 'pg';
import type { DataSource } from 'typeorm';
import type { PostgresDriver } from 'typeorm/driver/postgres/PostgresDriver';

/** A statement each pooled connection parses and plans once, under its name, then reuses. */
export interface PreparedStatement {
  name: string;
  text: string;
}

/**
 * The pg pool under a DataSource, for statements on a hot path: past TypeORM's query runner (its
 * per-call runner, events and logging).
 */
export function poolOf(dataSource: DataSource): Pool {
  return (dataSource.driver as PostgresDriver).master as Pool;
}

/**
 * Runs a prepared statement on a connection of the DataSource's pool.
 * - An error the server answers (a unique violation, when an idempotency key is replayed) keeps the
 *   connection: `pool.query` would drop it, and a client retrying in a loop would then cost a new
 *   backend per request.
 * - A connection whose plan a migration made stale (the statement's result type changed under an old
 *   replica) is dropped, and the call runs once more on a fresh one, which prepares it again.
 * - Any other error (the connection lost) drops the connection, as the pool would.
 */
export async function queryPrepared<Row extends QueryResultRow>(
  dataSource: DataSource,
  statement: PreparedStatement,
  values: unknown[],
): Promise<QueryResult<Row>> {
  for (let attempt = 1; ; attempt += 1) {
    const client = await poolOf(dataSource).connect();
    try {
      const result = await client.query<Row>({ name: statement.name, text: statement.text, values });
      client.release();
      return result;
    } catch (error) {
      const stale = isStalePlan(error);
      client.release(error instanceof DatabaseError && !stale ? undefined : (error as Error));
      if (!stale || attempt > 1) {
        throw error;
      }
    }
  }
}

/** PostgreSQL refuses to run a prepared statement whose result columns changed since it was prepared. */
function isStalePlan(error: unknown): boolean {
  return error instanceof DatabaseError && error.code === '0A000' && /cached plan must not change result type/.test(error.message);
}
