import { setTimeout as delay } from 'node:timers/promises';

import { Injectable, Logger } from '@nestjs/common';
import { Dispatcher, request } from 'undici';

import { Env } from '@app/config';
import { LastingCondition } from '@app/logging';
import { JobContext, JobHandler, JobResult } from '@app/queue';
import { ServiceAccountsService } from '@app/service-accounts';

import { SCHEDULE_KEY_TAG_HEADER, ScheduleCredentials } from './schedule-credentials';
import { ScheduleDispatchRepository } from './schedule-dispatch.repository';
import { normalizedEndpoint } from './schedule-endpoint';
import { ScheduleFireMetrics } from './schedule-fire-metrics';
import { ClaimedFire, FIRE_STATUS, FireDetails } from './schedule-fire-store';
import {
  clip,
  isRetryableStatus,
  isTerminalRunStatus,
  isTimeout,
  jsonRpcError,
  requestBody,
  runError,
  StartedRun,
  startedRun,
} from './schedule-http';
import { ScheduleAttempt } from './schedule-run.entity';
import { runPath, TargetType } from './schedule-target';

interface AttemptOutcome {
  ok: boolean;
  retryable: boolean;
  statusCode: number | null;
  error: string | null;
  run: StartedRun | null;
}

/** The Idempotency-Key of a fire's calls: one per attempt that may have started a run (see run()). */
const idempotencyKey = (fire: ClaimedFire, attempt: number): string => `schedule-run-${fire.id}-${attempt}`;

const FOLLOW_FIRST_POLL_MS = 250;
const FOLLOW_MAX_POLL_MS = 2000;

/** Waits `ms`, or less when `signal` aborts first (timers/promises removes its abort listener either way). */
function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return delay(ms, undefined, { signal }).catch(() => undefined);
}

/** How often a call that found nothing listening is sent again (see whenListening). */
const API_WAIT_MS = 500;
/**
 * How long a call waits for an api that refuses connections, at most: an api's start, slow migrations included (the
 * Kubernetes manifests give it five minutes), not the attempt's timeout (an hour by default).
 */
const API_WAIT_MAX_MS = 5 * 60_000;

/**
 * Sends; while the connection is refused, sends again for up to API_WAIT_MAX_MS, within `signal` (the attempt's
 * timeout). Nothing listens yet when the worker came up before the api (a restart, a rollout): such a call never
 * left, so the wait is not an attempt failed at once, and a catch-up fire is not lost to start-up order.
 * `refused` is told at the first refusal and once a minute after: an api that never comes (a wrong PUBLIC_URL, no
 * api deployed) is said at once in the log, and fails the attempt within minutes rather than holding the fire
 * running until its timeout. Any other failure is thrown on (see failure()).
 */
async function whenListening<T>(send: () => Promise<T>, signal: AbortSignal, refused: () => void): Promise<T> {
  const since = Date.now();
  const refusing = new LastingCondition();
  for (;;) {
    try {
      return await send();
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ECONNREFUSED') {
        throw error;
      }
      refusing.met(1, refused);
      await sleep(API_WAIT_MS, signal);
      if (signal.aborted || Date.now() - since >= API_WAIT_MAX_MS) {
        // Refused to the end: said as such rather than as a timeout.
        throw error;
      }
    }
  }
}

/** How a fire ended, as the queue engine records it (see ScheduleFireStore). */
function result(outcome: JobResult['outcome'], error: string | null, last?: ScheduleAttempt): JobResult {
  return { outcome, error, details: { last } satisfies FireDetails };
}

/**
 * Runs one claimed fire (the queue engine's handler of schedule fires): `method PUBLIC_URL+endpoint`
 * with the payload and the schedule's own credential, each attempt bounded by timeout_seconds
 * (following a background run to its end counts against it), retried up to max_retries after
 * retry_delay_seconds, every attempt recorded. The engine's signal stops it at the shutdown deadline.
 */
@Injectable()
export class ScheduleFirer implements JobHandler<ClaimedFire> {
  private readonly logger = new Logger(ScheduleFirer.name);

  constructor(
    private readonly env: Env,
    private readonly dispatch: ScheduleDispatchRepository,
    private readonly credentials: ScheduleCredentials,
    private readonly accounts: ServiceAccountsService,
    private readonly metrics: ScheduleFireMetrics,
  ) {}

  /** Runs the fire and logs one line about it: which schedule, what it called, how it ended, how long it took. */
  async handle(fire: ClaimedFire, context: JobContext): Promise<JobResult> {
    const startedAt = Date.now();
    this.metrics.lag.observe({ trigger: fire.trigger }, Math.max(0, fire.lagSeconds));
    const { fired, statusCode, attempts } = await this.run(fire, context.signal);
    const status = FIRE_STATUS[fired.outcome];
    this.metrics.fires.inc({ outcome: status });
    const ms = Date.now() - startedAt;
    const failed = status === 'failed';
    // A failed fire is a warning, with its error: what an operator looking into it needs first.
    this.logger[failed ? 'warn' : 'log'](
      {
        schedule_id: fire.scheduleId,
        fire_id: fire.id,
        status,
        status_code: statusCode,
        attempts,
        ms,
        ...(failed ? { error: fired.error } : {}),
      },
      `schedule fired: ${fire.scheduleId} ${fire.method} ${fire.endpoint} → ${status}${statusCode === null ? '' : ` (HTTP ${statusCode})`}, ${attempts} attempt(s), ${ms} ms`,
    );
    return fired;
  }

  private async run(fire: ClaimedFire, shutdown: AbortSignal): Promise<{ fired: JobResult; statusCode: number | null; attempts: number }> {
    if (!fire.enabled) {
      return { fired: result('cancelled', 'The schedule was disabled before this fire started'), statusCode: null, attempts: 0 };
    }
    const refusal = await this.ownerRefusal(fire);
    if (refusal) {
      return { fired: result('failed', refusal), statusCode: null, attempts: 0 };
    }
    let key = idempotencyKey(fire, 1);
    for (let attempt = 1; ; attempt += 1) {
      const { outcome, record } = await this.attempt(fire, attempt, key, shutdown);
      const final = outcome.ok || !outcome.retryable || attempt > fire.maxRetries || shutdown.aborted;
      if (final) {
        return {
          fired: result(outcome.ok ? 'completed' : 'failed', outcome.error, record),
          statusCode: outcome.statusCode,
          attempts: attempt,
        };
      }
      await this.dispatch.recordAttempt(fire.id, fire.lockedBy, record);
      // An attempt that got no answer (a timeout, a reset) may have started a run: the next one asks under the same
      // key, and a run endpoint answers with that run rather than starting another. An answered one makes way.
      if (outcome.statusCode !== null) {
        key = idempotencyKey(fire, attempt + 1);
      }
      await sleep(fire.retryDelaySeconds * 1000, shutdown);
      if (!shutdown.aborted && !(await this.dispatch.mayRetry(fire.id, fire.lockedBy))) {
        const why = `${outcome.error}; the schedule was paused or deleted meanwhile, so its remaining retries were dropped`;
        // Its last attempt is recorded already.
        return { fired: result('failed', why), statusCode: outcome.statusCode, attempts: attempt };
      }
    }
  }

  /** A schedule whose owning service account is revoked or expired is disabled, and this fire makes no call: the reason why. */
  private async ownerRefusal(fire: ClaimedFire): Promise<string | null> {
    if (!fire.ownerServiceAccountId) {
      return null;
    }
    const standing = await this.accounts.standing(fire.ownerServiceAccountId);
    if (standing.state === 'active') {
      return null;
    }
    const reason = `owner_${standing.state}:${standing.principal ?? fire.ownerServiceAccountId}`;
    await this.dispatch.disable(fire.scheduleId, reason);
    this.logger.warn({ schedule_id: fire.scheduleId, reason }, `Schedule ${fire.scheduleId} disabled: ${reason}`);
    return `Not fired: the schedule's service account is ${standing.state}; the schedule is disabled (${reason})`;
  }

  private async attempt(
    fire: ClaimedFire,
    attempt: number,
    key: string,
    shutdown: AbortSignal,
  ): Promise<{ outcome: AttemptOutcome; record: ScheduleAttempt }> {
    const startedAt = Date.now();
    const signal = AbortSignal.any([shutdown, AbortSignal.timeout(fire.timeoutSeconds * 1000)]);
    const outcome = await this.call(fire, key, signal).catch((error: unknown) => this.failure(error, fire, shutdown));
    const record: ScheduleAttempt = {
      attempt,
      started_at: Math.floor(startedAt / 1000),
      completed_at: Math.floor(Date.now() / 1000),
      duration_ms: Date.now() - startedAt,
      status_code: outcome.statusCode,
      error: outcome.error,
      run_id: outcome.run?.runId ?? null,
      run_status: outcome.run?.status ?? null,
    };
    return { outcome, record };
  }

  /** The URL of a call to this service, with a credential good for exactly that call. */
  private async signed(fire: ClaimedFire, method: string, path: string): Promise<{ url: URL; credentialHeaders: Record<string, string> }> {
    // Dot segments are resolved inside the path first, so no endpoint can climb above PUBLIC_URL's own path.
    const url = new URL(`${this.env.publicUrl}${normalizedEndpoint(path)}`);
    // The api sees the path below PUBLIC_URL's own (a proxy in front strips that prefix).
    const prefix = new URL(this.env.publicUrl).pathname.replace(/\/$/, '');
    const credential = await this.credentials.mint(fire.scheduleId, fire.timeoutSeconds + 60, {
      method,
      url: `${url.pathname.slice(prefix.length)}${url.search}`,
    });
    // The key tag beside it: an api holding another INTERNAL_SERVICE_TOKEN can then say so (see signedWithAnotherKey).
    return {
      url,
      credentialHeaders: { authorization: `Bearer ${credential}`, [SCHEDULE_KEY_TAG_HEADER]: await this.credentials.keyTag() },
    };
  }

  private async call(fire: ClaimedFire, key: string, signal: AbortSignal): Promise<AttemptOutcome> {
    const { url, credentialHeaders } = await this.signed(fire, fire.method, fire.endpoint);
    const { body, headers } = requestBody(fire.method, fire.payload);
    // undici's request rather than fetch: the same client without fetch's streams and Request objects, about a
    // third of its CPU per call, and a busy minute makes a call per schedule. It follows no redirects: a
    // schedule calls this service's own endpoints. An abort rejects with the signal's reason (see failure()).
    const send = () =>
      request(url, {
        method: fire.method as Dispatcher.HttpMethod,
        headers: { ...headers, ...credentialHeaders, 'x-request-id': `schedule-run-${fire.id}`, 'idempotency-key': key },
        body,
        signal,
      });
    const response = await whenListening(send, signal, () =>
      this.logger.warn(
        { schedule_id: fire.scheduleId, fire_id: fire.id, url: url.origin },
        `schedule fire: nothing listens at ${url.origin} (PUBLIC_URL): waiting up to ${API_WAIT_MAX_MS / 1000} s for the api; ` +
          "if it does not come, set the worker's PUBLIC_URL to the api's address",
      ),
    );
    const text = await response.body.text();
    if (response.statusCode < 200 || response.statusCode > 299) {
      return {
        ok: false,
        retryable: isRetryableStatus(response.statusCode),
        statusCode: response.statusCode,
        error: `HTTP ${response.statusCode}: ${clip(text)}`,
        run: null,
      };
    }
    const rpcError = jsonRpcError(text);
    if (rpcError) {
      return { ok: false, retryable: false, statusCode: response.statusCode, error: rpcError, run: null };
    }
    const run = fire.targetType && fire.targetId ? startedRun(text) : null;
    if (!run) {
      return { ok: true, retryable: false, statusCode: response.statusCode, error: null, run: null };
    }
    return this.follow(fire, run, response.statusCode, text, signal);
  }

  /** Polls the run the endpoint started until it ends; a run that ends other than completed fails the attempt. */
  private async follow(fire: ClaimedFire, run: StartedRun, statusCode: number, body: string, signal: AbortSignal): Promise<AttemptOutcome> {
    const { url, credentialHeaders } = await this.signed(
      fire,
      'GET',
      runPath({ type: fire.targetType as TargetType, id: fire.targetId! }, run.runId),
    );
    let current = run;
    let delay = FOLLOW_FIRST_POLL_MS;
    if (!isTerminalRunStatus(current.status)) {
      // The fire's history names the run while it is followed, not only once it ends.
      await this.dispatch.noteRun(fire.id, fire.lockedBy, statusCode, run);
    }
    try {
      while (!isTerminalRunStatus(current.status)) {
        await sleep(delay, signal);
        signal.throwIfAborted();
        delay = Math.min(delay * 1.5, FOLLOW_MAX_POLL_MS);
        const response = await request(url, { headers: credentialHeaders, signal });
        body = await response.body.text();
        if (response.statusCode >= 400 && !isRetryableStatus(response.statusCode)) {
          return {
            ok: false,
            retryable: false,
            statusCode: response.statusCode,
            error: `Could not follow run ${run.runId}: HTTP ${response.statusCode}: ${clip(body)}`,
            run: current,
          };
        }
        current = (response.statusCode < 300 && startedRun(body)) || current;
      }
    } catch (error) {
      if (signal.aborted && !isTimeout(error)) {
        throw error;
      }
      // Not retried: the run is accepted and may still finish; a retry would start a second one.
      return {
        ok: false,
        retryable: false,
        statusCode,
        error: `Run ${run.runId} was still ${current.status} after ${fire.timeoutSeconds}s`,
        run: current,
      };
    }
    const ok = current.status.toLowerCase() === 'completed';
    // Only a run that failed is worth another attempt; a cancelled or paused one was stopped on purpose.
    const failed = ['failed', 'error'].includes(current.status.toLowerCase());
    return { ok, retryable: failed, statusCode, error: ok ? null : runError(body, current.status), run: current };
  }

  private failure(error: unknown, fire: ClaimedFire, shutdown: AbortSignal): AttemptOutcome {
    if (shutdown.aborted) {
      return { ok: false, retryable: false, statusCode: null, error: 'The worker shut down during this attempt', run: null };
    }
    if (isTimeout(error)) {
      // A timed-out call may still be running on the server: retrying could do the work twice, but max_retries promises retries.
      return { ok: false, retryable: true, statusCode: null, error: `Timed out after ${fire.timeoutSeconds}s`, run: null };
    }
    return {
      ok: false,
      retryable: true,
      statusCode: null,
      error: `Request failed: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`,
      run: null,
    };
  }
}
