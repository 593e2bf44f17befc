import { DomainException } from '@app/errors';

export enum TraceErrorCode {
  NotFound = 'trace.not_found',
}

export class TraceException extends DomainException<TraceErrorCode> {}
