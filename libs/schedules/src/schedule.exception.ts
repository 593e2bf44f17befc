import { DomainException } from '@app/errors';

export enum ScheduleErrorCode {
  NotFound = 'schedule.not_found',
  RunNotFound = 'schedule.run_not_found',
  NameTaken = 'schedule.name_taken',
  Disabled = 'schedule.disabled',
  Forbidden = 'schedule.forbidden',
  /** Resuming would keep an owner the service disabled the schedule for. */
  OwnerCannotAct = 'schedule.owner_cannot_act',
}

export class ScheduleException extends DomainException<ScheduleErrorCode> {}
