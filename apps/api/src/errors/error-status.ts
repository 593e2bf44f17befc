import { HttpStatus } from '@nestjs/common';

import { AuthErrorCode } from '@app/auth';
import { assertUnreachable, DomainException, RequestErrorCode } from '@app/errors';
import { MemoryErrorCode } from '@app/memories';
import { QueueErrorCode } from '@app/queue';
import { RunErrorCode } from '@app/runs';
import { ScheduleErrorCode } from '@app/schedules';
import { ServiceAccountErrorCode } from '@app/service-accounts';
import { TraceErrorCode } from '@app/traces';

export type DomainErrorCode =
  | RequestErrorCode
  | AuthErrorCode
  | ServiceAccountErrorCode
  | RunErrorCode
  | QueueErrorCode
  | ScheduleErrorCode
  | MemoryErrorCode
  | TraceErrorCode;

/** Every domain error code and its HTTP status; a new code without a case does not compile. */
export function statusOf(code: DomainErrorCode): HttpStatus {
  switch (code) {
    case RequestErrorCode.BadRequest:
    case ServiceAccountErrorCode.InvalidScopes:
    case ServiceAccountErrorCode.PrivilegedNotAllowed:
    case RunErrorCode.InvalidRequest:
    case QueueErrorCode.NotRequeueable:
      return HttpStatus.BAD_REQUEST;
    case AuthErrorCode.Unauthenticated:
    case ServiceAccountErrorCode.MinterInactive:
      return HttpStatus.UNAUTHORIZED;
    case RequestErrorCode.Forbidden:
    case AuthErrorCode.Forbidden:
    case ServiceAccountErrorCode.CannotGrant:
    case ServiceAccountErrorCode.NotOwner:
    case ScheduleErrorCode.Forbidden:
      return HttpStatus.FORBIDDEN;
    case RequestErrorCode.NotFound:
    case ServiceAccountErrorCode.NotFound:
    case RunErrorCode.ComponentNotFound:
    case RunErrorCode.RunNotFound:
    case RunErrorCode.SessionNotFound:
    case QueueErrorCode.JobNotFound:
    case ScheduleErrorCode.NotFound:
    case ScheduleErrorCode.RunNotFound:
    case MemoryErrorCode.NotFound:
    case TraceErrorCode.NotFound:
      return HttpStatus.NOT_FOUND;
    case ServiceAccountErrorCode.NameTaken:
    case ServiceAccountErrorCode.NotActive:
    case RunErrorCode.IdempotencyKeyReused:
    case RunErrorCode.SessionBusy:
    case QueueErrorCode.MayStillBeRunning:
    case ScheduleErrorCode.NameTaken:
    case ScheduleErrorCode.Disabled:
    case ScheduleErrorCode.OwnerCannotAct:
      return HttpStatus.CONFLICT;
    case AuthErrorCode.Throttled:
      return HttpStatus.TOO_MANY_REQUESTS;
    case RequestErrorCode.DatabaseUnavailable:
    case AuthErrorCode.Unavailable:
    case RunErrorCode.QueueDisabled:
    case QueueErrorCode.Disabled:
      return HttpStatus.SERVICE_UNAVAILABLE;
    default:
      return assertUnreachable(code);
  }
}

export function isKnownDomainException(error: unknown): error is DomainException<DomainErrorCode> {
  return error instanceof DomainException;
}
