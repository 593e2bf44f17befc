import { DomainException } from '@app/errors';

export enum MemoryErrorCode {
  NotFound = 'memory.not_found',
}

export class MemoryException extends DomainException<MemoryErrorCode> {}
