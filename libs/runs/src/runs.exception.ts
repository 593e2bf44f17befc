import { DomainException } from '@app/errors';

export enum RunErrorCode {
  ComponentNotFound = 'run.component_not_found',
  RunNotFound = 'run.not_found',
  SessionNotFound = 'run.session_not_found',
  SessionBusy = 'run.session_busy',
  IdempotencyKeyReused = 'run.idempotency_key_reused',
  InvalidRequest = 'run.invalid_request',
  QueueDisabled = 'run.queue_disabled',
}

export class RunException extends DomainException<RunErrorCode> {}
