import { DomainException } from '@app/errors';

export enum QueueErrorCode {
  Disabled = 'queue.disabled',
  JobNotFound = 'queue.job_not_found',
  NotRequeueable = 'queue.not_requeueable',
  MayStillBeRunning = 'queue.may_still_be_running',
}

export class QueueException extends DomainException<QueueErrorCode> {
  static disabled(): QueueException {
    return new QueueException(QueueErrorCode.Disabled, 'Durable job queue is not enabled on this replica');
  }
}
