import { randomUUID } from 'node:crypto';

import { describe, expect, it } from 'vitest';

import { createTestDatabase, migrate, query, undoMigrationsTo } from './support/database';

describe('a run’s own spans moving onto its row', () => {
  it('gives a downgrade the spans runs kept, as the span batches the previous release reads', async () => {
    const databaseUrl = await createTestDatabase();
    const runId = randomUUID();
    const traceId = randomUUID().replaceAll('-', '');
    const attempts = [
      [{ span_id: '0000000000000002', parent_id: '0000000000000001', name: 'run.component', attributes: { 'run.status': 'failed' } }],
      [{ span_id: '0000000000000003', parent_id: '0000000000000001', name: 'run.component', attributes: { 'run.status': 'completed' } }],
    ];
    await query(
      databaseUrl,
      `INSERT INTO runs (id, session_id, component_type, component_id, user_id, background, status, message, trace_id, spans)
       VALUES ($1, 's', 'agent', 'echo', 'sa:ops', true, 'completed', 'hi', $2, $3)`,
      [runId, traceId, attempts.map((spans) => JSON.stringify(spans))],
    );
    // An untraced run's row (retention cleared its trace) gives nothing back.
    await query(
      databaseUrl,
      `INSERT INTO runs (id, session_id, component_type, component_id, background, status, message, spans)
       VALUES ($1, 's', 'agent', 'echo', true, 'completed', 'hi', $2)`,
      [randomUUID(), [JSON.stringify(attempts[0])]],
    );

    undoMigrationsTo(databaseUrl, 'RunSpansOnRuns1766100000001');
    const batches = await query<{ trace_id: string; spans: string }>(databaseUrl, `SELECT trace_id, spans FROM trace_spans ORDER BY spans`);
    expect(batches.map((row) => [row.trace_id, JSON.parse(row.spans)])).toEqual(attempts.map((spans) => [traceId, spans]));
    migrate(databaseUrl);
    expect(await query(databaseUrl, `SELECT count(*)::int AS runs FROM runs WHERE spans IS NULL`)).toEqual([{ runs: 2 }]);
  });
});
