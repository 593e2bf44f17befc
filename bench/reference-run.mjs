// What the background POST must do and nothing else, for the floor servers (bench/reference-server.mjs, and
// bench/nest-floor-server.mjs, the same inside a bare Nest app): verify a svc_pat_ token (looked up by its
// SHA-256 in service_accounts, then cached in memory as the api does) and write the session, the run and the
// job and notify workers in one statement against the service's own schema, prepared once per connection as
// the api's is. With REFERENCE_BATCHED=true the same rows are grouped into one statement as the api groups them
// (its WriteBatcher, from dist/), to show what the grouping alone is worth.
import { createHash } from 'node:crypto';

import pg from 'pg';
import { v7 as uuidv7 } from 'uuid';

import { WriteBatcher } from '../dist/libs/database/src/write-batcher.js';

const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 20 });
const verified = new Map();

/** The rows' sessions, runs and jobs, and the wake-up of idle workers: one row per POST, or a group (REFERENCE_BATCHED). */
const INSERT = `
  WITH input AS (SELECT * FROM unnest($1::uuid[], $2::varchar[], $3::varchar[], $4::varchar[], $5::text[]) AS input(id, session_id, agent, user_id, message)),
  session AS (
    INSERT INTO sessions (id, component_type, component_id, user_id) SELECT session_id, 'agent', agent, user_id FROM input RETURNING id
  ), run AS (
    INSERT INTO runs (id, session_id, component_type, component_id, user_id, background, status, message)
    SELECT input.id, input.session_id, 'agent', agent, user_id, true, 'queued', message FROM input JOIN session ON session.id = input.session_id RETURNING id
  ), job AS (
    INSERT INTO queue_jobs (id, job_type, component_type, component_id, session_id, user_id, payload, max_attempts)
    SELECT id, 'run', 'agent', agent, session_id, user_id, jsonb_build_object('message', message), 1 FROM run JOIN input USING (id) RETURNING id
  )
  SELECT pg_notify('queue_jobs_ready', '') WHERE EXISTS (SELECT 1 FROM job)`;

async function write(rows) {
  await pool.query({ name: 'background_runs', text: INSERT, values: [0, 1, 2, 3, 4].map((column) => rows.map((row) => row[column])) });
  return rows.map(() => undefined);
}

const batcher =
  process.env.REFERENCE_BATCHED === 'true' ? new WriteBatcher(write, { maxRows: 256, maxInFlight: 2, maxWaitMs: 5000 }) : null;

/** The caller (`sa:<name>`) an Authorization header names, or null. */
export async function principal(authorization) {
  const token = authorization?.startsWith('Bearer ') ? authorization.slice(7) : null;
  if (!token) {
    return null;
  }
  const hash = createHash('sha256').update(token, 'utf8').digest('hex');
  if (!verified.has(hash)) {
    const { rows } = await pool.query('SELECT name FROM service_accounts WHERE token_hash = $1 AND revoked_at IS NULL', [hash]);
    verified.set(hash, rows[0] ? `sa:${rows[0].name}` : null);
  }
  return verified.get(hash);
}

/** Stores a background run of an agent; answers the 202 body. */
export async function storeBackgroundRun(agentId, user, message) {
  // The service's ids: time-ordered UUIDs (v7).
  const runId = uuidv7();
  const sessionId = uuidv7();
  const row = [runId, sessionId, agentId, user, message];
  await (batcher ? batcher.submit(row) : write([row]));
  return { run_id: runId, session_id: sessionId, status: 'queued' };
}

export function endPool() {
  return pool.end();
}
