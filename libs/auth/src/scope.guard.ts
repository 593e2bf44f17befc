import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { FastifyRequest } from 'fastify';

import { Principal } from '@app/access';

import { Authenticator, credentialsOf } from './authenticator.service';
import { PUBLIC_ROUTE, requiredScope, ROUTE_SCOPE, RouteScope, UNSCHEDULABLE, UnschedulableReason } from './scopes.decorator';

export type AuthenticatedRequest = FastifyRequest & { principal?: Principal };

/** Global guard, deny by default: a route without @RequireScope or @Public never runs. */
@Injectable()
export class ScopeGuard implements CanActivate {
  constructor(
    private readonly reflector: Reflector,
    private readonly authenticator: Authenticator,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const targets = [context.getHandler(), context.getClass()];
    const request = context.switchToHttp().getRequest<AuthenticatedRequest>();
    const credentials = credentialsOf(request);
    const unfitness = this.reflector.getAllAndOverride<UnschedulableReason | undefined>(UNSCHEDULABLE, targets);
    if (unfitness) {
      await this.authenticator.refuseUnfitFire(credentials, unfitness, request.body);
    }
    if (this.reflector.getAllAndOverride<boolean>(PUBLIC_ROUTE, targets)) {
      return true;
    }
    const rule = this.reflector.getAllAndOverride<RouteScope | undefined>(ROUTE_SCOPE, targets);
    if (!rule) {
      throw new Error(`${context.getClass().name}.${context.getHandler().name} declares neither @RequireScope nor @Public`);
    }
    request.principal = await this.authenticator.authenticate(credentials, requiredScope(rule, request.params as Record<string, unknown>));
    return true;
  }
}
