// What the background POST must do and nothing else, for the floor servers (bench/reference-server.mjs, and
// bench/nest-floor-server.mjs, the same inside a bare Nest app): verify a svc_pat_ token (looked up by its
// SHA-256 in service_accounts, then cached in memory as the api does) and write the session, the run and the
// job and notify workers in one statement against the service's own schema, prepared once per connection as
// the api's is.
import { createHash } from 'node:crypto';

import pg from 'pg';
import { v7 as uuidv7 } from 'uuid';

const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 20 });
const verified = new Map();

const INSERT = `
  WITH session AS (
    INSERT INTO sessions (id, component_type, component_id, user_id) VALUES ($2, 'agent', $3, $4) RETURNING id
  ), run AS (
    INSERT INTO runs (id, session_id, component_type, component_id, user_id, background, status, message)
    SELECT $1, id, 'agent', $3, $4, true, 'queued', $5 FROM session RETURNING id
  ), job AS (
    INSERT INTO queue_jobs (id, job_type, component_type, component_id, session_id, user_id, payload, max_attempts)
    SELECT id, 'run', 'agent', $3, $2, $4, jsonb_build_object('message', $5::text), 1 FROM run RETURNING id
  )
  SELECT pg_notify('queue_jobs_ready', '') FROM job`;

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
  await pool.query({ name: 'background_run', text: INSERT, values: [runId, sessionId, agentId, user, message] });
  return { run_id: runId, session_id: sessionId, status: 'queued' };
}

export function endPool() {
  return pool.end();
}
