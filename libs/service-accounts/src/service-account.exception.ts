import { DomainException } from '@app/errors';

export enum ServiceAccountErrorCode {
  NotFound = 'service_account.not_found',
  NameTaken = 'service_account.name_taken',
  InvalidScopes = 'service_account.invalid_scopes',
  PrivilegedNotAllowed = 'service_account.privileged_not_allowed',
  CannotGrant = 'service_account.cannot_grant',
  /** Revoking or rotating an account someone else minted, without the admin scope. */
  NotOwner = 'service_account.not_owner',
  /** Rotation needs an active account: a revoked or expired one answers 409. */
  NotActive = 'service_account.not_active',
  /** The service account whose token mints was revoked or expired meanwhile (its token still cached): 401. */
  MinterInactive = 'service_account.minter_inactive',
}

export class ServiceAccountException extends DomainException<ServiceAccountErrorCode> {}
