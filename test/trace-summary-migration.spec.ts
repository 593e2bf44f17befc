import { randomUUID } from 'node:crypto';

import { describe, expect, it } from 'vitest';

import { createTestDatabase, migrate, query, undoMigrationsTo } from './support/database';

describe('trace summaries moving onto the runs', () => {
  it('keeps every stored trace readable through the upgrade, and gives a downgrade back what it had', async () => {
    const databaseUrl = await createTestDatabase();
    undoMigrationsTo(databaseUrl, 'TraceSummaryOnRuns1766000000001');

    /** A run as the previous release traces it: the run, and its summary written into traces. */
    const tracedByPreviousRelease = async (status: string) => {
      const runId = randomUUID();
      const traceId = randomUUID().replaceAll('-', '');
      await query(
        databaseUrl,
        `INSERT INTO runs (id, session_id, component_type, component_id, user_id, background, status, message)
         VALUES ($1, 's', 'agent', 'echo', 'sa:ops', true, $2, 'hi')`,
        [runId, status],
      );
      await query(
        databaseUrl,
        `INSERT INTO traces (trace_id, run_id, session_id, user_id, component_type, component_id, started_at)
         VALUES ($1, $2, 's', 'sa:ops', 'agent', 'echo', now()) ON CONFLICT DO NOTHING`,
        [traceId, runId],
      );
      return { runId, traceId };
    };

    // A run traced by the earlier release: its summary row, and its request span in the api's batch.
    const { runId: earlier, traceId: earlierTrace } = await tracedByPreviousRelease('completed');
    const earlierSpan = JSON.stringify([
      { span_id: '0000000000000001', parent_id: null, name: 'run.request', attributes: { 'run.id': earlier } },
    ]);
    await query(databaseUrl, `INSERT INTO trace_spans (trace_id, started_at, spans) VALUES ($1, now(), $2)`, [earlierTrace, earlierSpan]);

    migrate(databaseUrl);
    const summaries = `SELECT trace_id, run_id, user_id, status FROM trace_summaries ORDER BY started_at`;
    expect(await query(databaseUrl, summaries)).toEqual([
      { trace_id: earlierTrace, run_id: earlier, user_id: 'sa:ops', status: 'completed' },
    ]);

    // During a rolling update the previous release still writes summaries into traces: each lands on its run.
    const { runId: during, traceId: duringTrace } = await tracedByPreviousRelease('queued');
    expect(await query(databaseUrl, `SELECT trace_id FROM runs WHERE id = $1 UNION ALL SELECT trace_id FROM traces`, [during])).toEqual([
      { trace_id: duringTrace },
    ]);
    await query(databaseUrl, `UPDATE runs SET trace_id = NULL WHERE id = $1`, [during]);

    // A run traced by this release: its request span on its row, without what the row says.
    const later = randomUUID();
    const laterTrace = randomUUID().replaceAll('-', '');
    const laterSpan = JSON.stringify({ span_id: '0000000000000002', parent_id: null, started_at: 1.5, ended_at: 2.5 });
    await query(
      databaseUrl,
      `INSERT INTO runs (id, session_id, component_type, component_id, user_id, background, status, message, trace_id, request_span)
       VALUES ($1, 's', 'agent', 'echo', 'sa:ops', true, 'queued', 'hi', $2, $3)`,
      [later, laterTrace, laterSpan],
    );

    undoMigrationsTo(databaseUrl, 'TraceSummaryOnRuns1766000000001');
    expect(await query(databaseUrl, summaries)).toEqual([
      { trace_id: earlierTrace, run_id: earlier, user_id: 'sa:ops', status: 'completed' },
      { trace_id: laterTrace, run_id: later, user_id: 'sa:ops', status: 'queued' },
    ]);
    const spans = await query<{ trace_id: string; spans: string }>(
      databaseUrl,
      `SELECT trace_id, spans FROM trace_spans ORDER BY started_at`,
    );
    expect(spans.map((row) => [row.trace_id, JSON.parse(row.spans)])).toEqual([
      [earlierTrace, JSON.parse(earlierSpan)],
      [
        laterTrace,
        [
          {
            span_id: '0000000000000002',
            parent_id: null,
            started_at: 1.5,
            ended_at: 2.5,
            name: 'run.request',
            attributes: {
              'run.id': later,
              'session.id': 's',
              'user.id': 'sa:ops',
              'component.type': 'agent',
              'component.id': 'echo',
              'run.status': 'queued',
            },
          },
        ],
      ],
    ]);
    migrate(databaseUrl);
  });
});
