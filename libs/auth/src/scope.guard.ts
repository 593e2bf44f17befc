import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { FastifyRequest } from 'fastify';

import { Principal } from '@app/access';

import { AuthErrorCode, AuthException } from './auth.exception';
import { Authenticator, credentialsOf } from './authenticator.service';
import { requiredScope, RouteDeclaration, routeDeclaration } from './scopes.decorator';

export type AuthenticatedRequest = FastifyRequest & { principal?: Principal };

/** Global guard, deny by default: a route without @RequireScope, @ScopeFromBody or @Public never runs. */
@Injectable()
export class ScopeGuard implements CanActivate {
  /** Each route's declaration, read once (decorators do not change after boot), by controller then handler: a subclass may inherit a handler. */
  private readonly declarations = new WeakMap<object, WeakMap<object, RouteDeclaration>>();

  constructor(
    private readonly reflector: Reflector,
    private readonly authenticator: Authenticator,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const { isPublic, rule, bodyScope, unschedulable } = this.declarationOf(context);
    const request = context.switchToHttp().getRequest<AuthenticatedRequest>();
    const credentials = credentialsOf(request);
    if (unschedulable) {
      await this.authenticator.refuseUnfitFire(credentials, unschedulable, request.body);
    }
    if (isPublic) {
      return true;
    }
    if (!rule && !bodyScope) {
      throw new Error(`${context.getClass().name}.${context.getHandler().name} declares neither @RequireScope, @ScopeFromBody nor @Public`);
    }
    const params = request.params as Record<string, unknown>;
    // A route serving several methods at one URL (A2A's JSON-RPC) takes its scope from the method in the body.
    const scope = bodyScope ? bodyScope(params, request.body) : requiredScope(rule!, params);
    request.principal = await this.authenticator.authenticate(credentials, scope, rule?.listedPerComponent);
    if (rule?.handsOutCredential && request.principal.kind === 'anonymous') {
      throw new AuthException(
        AuthErrorCode.Unauthenticated,
        `${rule.handsOutCredential} needs a credential, even on an instance without authentication: the OS security key, or a JWT or service-account token with ${rule.scope} (or platform:admin)`,
      );
    }
    return true;
  }

  private declarationOf(context: ExecutionContext): RouteDeclaration {
    const [handler, controller] = [context.getHandler(), context.getClass()];
    let ofController = this.declarations.get(controller);
    if (!ofController) {
      ofController = new WeakMap();
      this.declarations.set(controller, ofController);
    }
    let declared = ofController.get(handler);
    if (!declared) {
      declared = routeDeclaration(this.reflector, handler, controller);
      ofController.set(handler, declared);
    }
    return declared;
  }
}
