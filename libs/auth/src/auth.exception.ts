import { missingScopeDetail } from '@app/access';
import { DomainException } from '@app/errors';

export enum AuthErrorCode {
  Unauthenticated = 'auth.unauthenticated',
  Forbidden = 'auth.forbidden',
  Throttled = 'auth.throttled',
  Unavailable = 'auth.unavailable',
}

export class AuthException extends DomainException<AuthErrorCode> {
  constructor(
    code: AuthErrorCode,
    detail: string,
    /** The `WWW-Authenticate` challenge of a 401 (RFC 6750). */
    readonly challenge = 'Bearer',
  ) {
    super(code, detail);
  }

  static insufficientScope(required: string): AuthException {
    return new AuthException(AuthErrorCode.Forbidden, missingScopeDetail(required));
  }
}
