/**
 * SQL folding a table of count deltas (`key`, `delta` rows that triggers append, so writers never wait
 * on each other for a shared counter row) into one row per key, once it holds more than $1 rows:
 * reading the counts stays a sum over a handful of rows. Rows appended meanwhile are not in this
 * statement's snapshot and stay as they are: no change is lost or counted twice, whoever folds.
 */
export function foldCountDeltas(table: string, key: string): string {
  return `
  WITH folded AS (
    DELETE FROM ${table} WHERE (SELECT count(*) FROM ${table}) > $1 RETURNING ${key}, delta
  )
  INSERT INTO ${table} (${key}, delta) SELECT ${key}, sum(delta) FROM folded GROUP BY ${key} HAVING sum(delta) <> 0`;
}
