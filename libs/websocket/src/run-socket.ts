import { setTimeout as sleep } from 'node:timers/promises';

import { FastifyBaseLogger } from 'fastify';
import type { RawData, WebSocket } from 'ws';

import { forComponent, Principal } from '@app/access';
import { Authenticator, AuthErrorCode, AuthException, Credentials } from '@app/auth';
import { ErrorRenderer } from '@app/errors';
import { TERMINAL_STATUSES } from '@app/queue';
import { ComponentKind, finalEvent, RunDto, RunEvent, RunsService } from '@app/runs';

import { ClientFrame, FrameRejected, parseFrame } from './frames';

export const AUTH_TIMEOUT_MS = 10_000;
export const HEARTBEAT_MS = 30_000;
/**
 * How often a socket with a run or a watch going verifies its credential again: a token revoked or expired
 * meanwhile ends its frames within about this long, not at the client's next action (a watch of a paused run
 * may last for days).
 */
export const RECHECK_MS = 1_000;
/** Bytes a socket may hold unsent before the client counts as too slow and is disconnected (close code 1013). */
export const MAX_BUFFERED_BYTES = 1024 * 1024;
/** How often `watch` reads a background run that a worker is running. */
const WATCH_POLL_MS = 200;
/** Runs one socket may watch at once: each is a read every WATCH_POLL_MS until its run ends (a paused run waits for an operator). */
export const MAX_WATCHES = 16;
/**
 * Runs one socket may have going at once: each runs its component in this process (its model calls
 * included) and goes on when the socket closes, so one connection must not start them without bound.
 */
export const MAX_RUNS = 16;
/** What one socket may have in progress at once, per action, and the refusal past it. */
const LIMITS = {
  run: { most: MAX_RUNS, refusal: `This socket already has ${MAX_RUNS} runs going: wait for one to end` },
  watch: { most: MAX_WATCHES, refusal: `This socket already watches ${MAX_WATCHES} runs: wait for one to end` },
};
const FINAL = new Set<string>(TERMINAL_STATUSES);

export interface SocketServices {
  authenticator: Authenticator;
  runs: RunsService;
  errors: ErrorRenderer;
}

/**
 * One /ws connection. It authenticates once (the upgrade's Authorization header, or an `authenticate`
 * frame within 10 s), then answers each action after the scope check of its REST route, concurrently:
 * a `cancel` need not wait for a `run` on the same socket. Each action verifies the credential again, as
 * each REST request does, and so does a socket with a run or watch going, every RECHECK_MS: a token revoked or
 * expired since the socket opened closes it.
 */
export class RunSocket {
  private principal: Promise<Principal> | null = null;
  private authorization: string | undefined;
  private readonly inProgress = { run: 0, watch: 0 };
  private heartbeatTimer: NodeJS.Timeout | undefined;
  private recheckTimer: NodeJS.Timeout | undefined;
  private rechecking = false;
  private authTimer: NodeJS.Timeout | undefined;
  private alive = true;
  private closed = false;

  constructor(
    private readonly socket: WebSocket,
    private readonly credentials: Omit<Credentials, 'authorization'> & { authorization?: string },
    private readonly services: SocketServices,
    private readonly log: FastifyBaseLogger,
  ) {}

  /** Listeners first (frames may already be arriving), then the header's credential or the 10 s wait for one. */
  start(): void {
    this.socket.on('message', (data: RawData) => void this.onFrame(data));
    this.socket.on('pong', () => (this.alive = true));
    this.socket.on('close', () => this.dispose());
    this.heartbeatTimer = setInterval(() => this.heartbeat(), HEARTBEAT_MS);
    this.recheckTimer = setInterval(() => void this.recheck(), RECHECK_MS);
    const { authorization } = this.credentials;
    if (authorization !== undefined) {
      this.principal = this.identify(authorization);
    } else if (this.services.authenticator.mode !== 'none') {
      this.authTimer = setTimeout(
        () => this.authFailed('No credential within 10 s: send {"action": "authenticate", "token": "..."} first'),
        AUTH_TIMEOUT_MS,
      );
    }
  }

  private async onFrame(data: RawData): Promise<void> {
    let frame: ClientFrame;
    try {
      frame = parseFrame(data.toString());
    } catch (error) {
      this.fail(error, 'frame');
      return;
    }
    if (frame.action === 'authenticate') {
      this.authenticateWith(frame.token);
      return;
    }
    if (!this.principal && this.services.authenticator.mode === 'none') {
      // An open instance serves anonymous callers, as REST does; a token, once sent, must verify.
      this.principal = this.identify(undefined);
    }
    if (!this.principal) {
      this.answering(frame.request_id)({
        event: 'error',
        status: 401,
        detail: 'Authenticate first: {"action": "authenticate", "token": "..."}',
      });
      return;
    }
    if (!(await this.principal.catch(() => null))) {
      return; // its credential did not verify: the socket is closing
    }
    let principal: Principal;
    try {
      principal = await this.verify(this.authorization);
    } catch (error) {
      if (error instanceof AuthException) {
        this.refused(error);
      } else {
        this.fail(error, frame.action, frame.request_id); // the database is away, say: this action fails, the socket stays
      }
      return;
    }
    await this.act(principal, frame).catch((error: unknown) => this.fail(error, frame.action, frame.request_id));
  }

  private authenticateWith(token: string): void {
    if (this.principal) {
      this.send({ event: 'error', status: 400, detail: 'This socket is already authenticated' });
      return;
    }
    clearTimeout(this.authTimer);
    this.principal = this.identify(`Bearer ${token}`);
  }

  /** A credential that does not verify closes the socket, even on an open instance (where REST would ignore it). */
  private identify(authorization: string | undefined): Promise<Principal> {
    this.authorization = authorization;
    const identified = this.verify(authorization).then((principal) => {
      this.send({ event: 'authenticated', data: { principal: principal.userId, scopes: [...principal.scopes] } });
      return principal;
    });
    identified.catch((error: unknown) => this.refused(error));
    return identified;
  }

  /** Who the credential names now: a token sent must verify (an open instance would serve it anonymously). */
  private async verify(authorization: string | undefined): Promise<Principal> {
    const principal = await this.services.authenticator.identify({ ...this.credentials, authorization });
    if (authorization !== undefined && principal.kind === 'anonymous') {
      throw new AuthException(AuthErrorCode.Unauthenticated, 'Invalid authentication token');
    }
    return principal;
  }

  /**
   * While a run or a watch sends frames for this socket's principal, its credential is verified again (the
   * verification cache answers most checks): one that no longer verifies closes the socket, as the next action
   * would. Runs it started go on, as when a client leaves. A check that fails otherwise (the database away) is
   * tried again at the next tick.
   */
  private async recheck(): Promise<void> {
    if (!this.principal || this.closed || this.rechecking || this.inProgress.run + this.inProgress.watch === 0) {
      return;
    }
    this.rechecking = true;
    try {
      await this.verify(this.authorization);
    } catch (error) {
      if (error instanceof AuthException) {
        this.refused(error);
      }
    } finally {
      this.rechecking = false;
    }
  }

  private async act(principal: Principal, frame: Exclude<ClientFrame, { action: 'authenticate' }>): Promise<void> {
    const answer = this.answering(frame.request_id);
    switch (frame.action) {
      case 'run':
        this.authorize(principal, frame.component_type, frame.component_id);
        return this.limited('run', () =>
          this.services.runs.stream(
            principal,
            frame.component_type,
            frame.component_id,
            { message: frame.message, session_id: frame.session_id },
            answer,
          ),
        );
      case 'watch':
        return this.limited('watch', async () => this.watch(principal, await this.located(principal, frame.run_id), answer));
      case 'cancel': {
        const run = await this.located(principal, frame.run_id);
        const after = await this.services.runs.cancel(principal, run.component_type as ComponentKind, run.component_id, run.run_id);
        answer({ event: 'CancelRequested', data: { ...after } });
        return;
      }
    }
  }

  /** Sends the frames answering one action, each with the action's request_id when it came with one. */
  private answering(requestId: string | undefined): (frame: RunEvent | Record<string, unknown>) => void {
    return requestId === undefined ? (frame) => this.send(frame) : (frame) => this.send({ ...frame, request_id: requestId });
  }

  /** Does `work` unless the socket already has as many of `action` in progress as it may (a 429 frame). */
  private async limited(action: keyof typeof LIMITS, work: () => Promise<unknown>): Promise<void> {
    if (this.inProgress[action] >= LIMITS[action].most) {
      throw new FrameRejected(429, LIMITS[action].refusal);
    }
    this.inProgress[action] += 1;
    try {
      await work();
    } finally {
      this.inProgress[action] -= 1;
    }
  }

  /** The caller's run and the right to its REST routes (`<resource>:run`, narrowed to its component). */
  private async located(principal: Principal, runId: string): Promise<RunDto> {
    const run = await this.services.runs.locate(principal, runId);
    this.authorize(principal, run.component_type as ComponentKind, run.component_id);
    return run;
  }

  private authorize(principal: Principal, kind: ComponentKind, componentId: string): void {
    this.services.authenticator.authorize(principal, forComponent(`${kind}s:run`, componentId));
  }

  /**
   * The events of a stream, for a run this process does not execute: RunStarted with the run as it stands,
   * then, once a worker (or another replica) has finished it, its content as one RunContent (a client that
   * assembles a stream's deltas gets the whole text) and the final event.
   */
  private async watch(principal: Principal, run: RunDto, answer: (frame: RunEvent | Record<string, unknown>) => void): Promise<void> {
    answer({ event: 'RunStarted', data: { ...run } });
    let current = run;
    while (!FINAL.has(current.status) && !this.closed) {
      await sleep(WATCH_POLL_MS);
      current = await this.services.runs.get(principal, current.component_type as ComponentKind, current.component_id, current.run_id);
    }
    if (current.content) {
      answer({ event: 'RunContent', data: { run_id: current.run_id, content: current.content } });
    }
    answer(finalEvent(current));
  }

  private fail(error: unknown, action: string, requestId = error instanceof FrameRejected ? error.requestId : undefined): void {
    const { status, detail } = error instanceof FrameRejected ? error : this.services.errors.render(error, `WS ${action}`);
    this.answering(requestId)({ event: 'error', status, detail });
  }

  /** A credential that did not verify: the error's detail as the auth_error, and the socket closed. */
  private refused(error: unknown): void {
    this.authFailed(this.services.errors.render(error, 'WS authenticate').detail);
  }

  private authFailed(detail: string): void {
    this.send({ event: 'auth_error', detail });
    // Nothing more goes out for a principal whose credential failed: not even a run's frames in flight.
    this.closed = true;
    this.socket.close(1008, 'Authentication failed');
  }

  /**
   * Never more than MAX_BUFFERED_BYTES waiting for a slow reader: past that the socket is closed (1013,
   * try again later) rather than buffered without bound. Runs it started go on and stay readable over REST.
   */
  private send(frame: RunEvent | Record<string, unknown>): void {
    if (this.closed) {
      return;
    }
    if (this.socket.bufferedAmount > MAX_BUFFERED_BYTES) {
      this.log.warn({ buffered: this.socket.bufferedAmount }, 'closing a WebSocket whose client reads too slowly');
      this.closed = true;
      this.socket.close(1013, 'Send buffer full: the client reads too slowly');
      return;
    }
    this.socket.send(JSON.stringify(frame));
  }

  /** A peer that has not answered the previous ping is gone: its socket is dropped. */
  private heartbeat(): void {
    if (!this.alive) {
      this.socket.terminate();
      return;
    }
    this.alive = false;
    this.socket.ping();
  }

  private dispose(): void {
    this.closed = true;
    clearInterval(this.heartbeatTimer);
    clearInterval(this.recheckTimer);
    clearTimeout(this.authTimer);
  }
}
