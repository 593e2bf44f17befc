/** The keys of the api's job body, sorted: what every job the api or `svc jobs` prints must carry. */
export const JOB_KEYS = [
  'attempt',
  'available_at',
  'completed_at',
  'component_id',
  'component_type',
  'created_at',
  'error',
  'id',
  'idempotency_key',
  'job_type',
  'locked_at',
  'locked_by',
  'max_attempts',
  'payload',
  'session_id',
  'status',
  'updated_at',
  'user_id',
];

/** The keys of a service account as the CLI prints it, sorted (never a token or a hash). */
export const ACCOUNT_KEYS = [
  'created_at',
  'expires_at',
  'id',
  'last_used_at',
  'last_used_ip',
  'name',
  'principal',
  'revoked_at',
  'scopes',
  'token_prefix',
];
