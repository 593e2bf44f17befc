import { DomainException } from '@app/errors';

export enum AuthErrorCode {
  Unauthenticated = 'auth.unauthenticated',
  Forbidden = 'auth.forbidden',
  Throttled = 'auth.throttled',
  Unavailable = 'auth.unavailable',
}

export class AuthException extends DomainException<AuthErrorCode> {
  constructor(code: AuthErrorCode, detail: string) {
    super(code, detail);
  }

  static insufficientScope(scopes: string[]): AuthException {
    return new AuthException(AuthErrorCode.Forbidden, `Insufficient permissions. Required scope(s): ${scopes.join(', ')}`);
  }
}
