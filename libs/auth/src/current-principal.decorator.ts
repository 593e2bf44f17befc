import { createParamDecorator, ExecutionContext } from '@nestjs/common';

import { Principal } from '@app/access';

import { AuthenticatedRequest } from './scope.guard';

/** The caller the ScopeGuard authenticated for this request. */
export const CurrentPrincipal = createParamDecorator((_data: unknown, context: ExecutionContext): Principal => {
  const principal = context.switchToHttp().getRequest<AuthenticatedRequest>().principal;
  if (!principal) {
    throw new Error('CurrentPrincipal used on a route the ScopeGuard did not authenticate');
  }
  return principal;
});
