import { DomainException } from '@app/errors';

export enum QueueErrorCode {
  Disabled = 'queue.disabled',
  JobNotFound = 'queue.job_not_found',
  NotRequeueable = 'queue.not_requeueable',
  MayStillBeRunning = 'queue.may_still_be_running',
}

/** What a replica without the queue answers (503) to the queue routes. */
export const QUEUE_DISABLED_DETAIL = 'Durable job queue is not enabled on this replica';

export class QueueException extends DomainException<QueueErrorCode> {
  static disabled(): QueueException {
    return new QueueException(QueueErrorCode.Disabled, QUEUE_DISABLED_DETAIL);
  }
}
