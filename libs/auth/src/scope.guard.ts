import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { FastifyRequest } from 'fastify';

import { Principal } from '@app/access';

import { Authenticator, credentialsOf } from './authenticator.service';
import {
  BODY_SCOPE,
  BodyScope,
  PUBLIC_ROUTE,
  requiredScope,
  ROUTE_SCOPE,
  RouteScope,
  UNSCHEDULABLE,
  UnschedulableReason,
} from './scopes.decorator';

export type AuthenticatedRequest = FastifyRequest & { principal?: Principal };

/** Global guard, deny by default: a route without @RequireScope, @ScopeFromBody or @Public never runs. */
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
    const params = request.params as Record<string, unknown>;
    const rule = this.reflector.getAllAndOverride<RouteScope | undefined>(ROUTE_SCOPE, targets);
    const scopeOfBody = this.reflector.getAllAndOverride<BodyScope | undefined>(BODY_SCOPE, targets);
    if (!rule && !scopeOfBody) {
      throw new Error(`${context.getClass().name}.${context.getHandler().name} declares neither @RequireScope, @ScopeFromBody nor @Public`);
    }
    // A route serving several methods at one URL (A2A's JSON-RPC) takes its scope from the method in the body.
    const scope = scopeOfBody ? scopeOfBody(params, request.body) : requiredScope(rule!, params);
    request.principal = await this.authenticator.authenticate(credentials, scope);
    return true;
  }
}
