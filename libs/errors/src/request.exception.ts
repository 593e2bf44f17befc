import { DomainException } from './domain.exception';

export enum RequestErrorCode {
  BadRequest = 'request.bad_request',
  NotFound = 'request.not_found',
  Forbidden = 'request.forbidden',
  DatabaseUnavailable = 'request.database_unavailable',
}

/** Errors about the request as a whole rather than one domain's rules. */
export class RequestException extends DomainException<RequestErrorCode> {}
