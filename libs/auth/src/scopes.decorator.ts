import { applyDecorators, SetMetadata } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { ApiBearerAuth, ApiExtension, ApiForbiddenResponse, ApiSecurity, ApiUnauthorizedResponse } from '@nestjs/swagger';

import { forComponent } from '@app/access';
import { ErrorBodyDto } from '@app/errors';

export const PUBLIC_ROUTE = 'auth:public';
export const ROUTE_SCOPE = 'auth:scope';

export interface RouteScope {
  scope: string;
  /** Path parameter holding a component id: the scope then also accepts `<resource>:<id>:<action>`. */
  componentParam?: string;
  /**
   * A list of components: a grant for any one of them (`agents:echo-agent:read`) passes too, and the route lists
   * only the components the caller holds a grant for.
   */
  listedPerComponent?: boolean;
  /**
   * What the route does, when it hands out a credential (minting, rotating a token): it then needs a real
   * credential even on an open instance, and an anonymous caller is refused (401) before its body is validated.
   */
  handsOutCredential?: string;
}

/** The scope a call must hold: the route's, narrowed to the component its path names (REST path params or MCP tool arguments). */
export function requiredScope(rule: RouteScope, params: Readonly<Record<string, unknown>>): string {
  const componentId = rule.componentParam ? params[rule.componentParam] : undefined;
  return typeof componentId === 'string' && componentId !== '' ? forComponent(rule.scope, componentId) : rule.scope;
}

export const BODY_SCOPE = 'auth:body-scope';

/** The scope a call needs, from its path parameters and body: one URL that serves several methods (A2A's JSON-RPC). */
export type BodyScope = (params: Readonly<Record<string, unknown>>, body: unknown) => string;

/**
 * Instead of @RequireScope on a route whose scope depends on the body: the guard asks for the scope this
 * returns, and a schedule aimed at the route is checked against the call it will make the same way.
 * The OpenAPI document shows `scopeSummary` as the route's `x-required-scope`.
 */
export function ScopeFromBody(scopeOf: BodyScope, scopeSummary: string): MethodDecorator {
  return applyDecorators(
    SetMetadata(BODY_SCOPE, scopeOf),
    ApiBearerAuth('bearer'),
    ApiExtension('x-required-scope', scopeSummary),
    ApiUnauthorizedResponse({ description: 'Missing or invalid credential', type: ErrorBodyDto }),
    ApiForbiddenResponse({ description: 'The credential lacks the scope of the method called', type: ErrorBodyDto }),
  );
}

export const UNSCHEDULABLE = 'auth:unschedulable';

/** Why a schedule's fire cannot call a route to any use with this body, or null when it can. */
export type UnschedulableReason = (body: unknown) => string | null;

/**
 * A route a schedule's fire cannot call to any use (it needs a client or headers a fire is not), always or
 * for some bodies: the reason says why and what to schedule instead, and such a schedule is refused with it (422).
 */
export function Unschedulable(reason: string | UnschedulableReason): MethodDecorator & ClassDecorator {
  return SetMetadata(UNSCHEDULABLE, typeof reason === 'string' ? () => reason : reason);
}

/** What a route declares about its callers, read from its decorators (on the handler, else on its controller). */
export interface RouteDeclaration {
  isPublic: boolean;
  rule?: RouteScope;
  bodyScope?: BodyScope;
  unschedulable?: UnschedulableReason;
}

/**
 * A route that hands out a credential is no route for a fire: the token it answers would go nowhere (a fire keeps
 * no answer), and a rotation would end the token in use after its grace with no one holding the new one.
 */
const HANDS_OUT_CREDENTIAL: UnschedulableReason = () =>
  'A schedule cannot call a route that hands out a credential: a fire keeps no answer, so the token would be lost';

/** One reading of a route's declaration, for the guard that enforces it and the route table schedules and MCP consult. */
export function routeDeclaration(reflector: Reflector, handler: object, controller: object): RouteDeclaration {
  const targets = [handler, controller] as Parameters<Reflector['getAllAndOverride']>[1];
  const rule = reflector.getAllAndOverride<RouteScope | undefined>(ROUTE_SCOPE, targets);
  return {
    isPublic: reflector.getAllAndOverride<boolean | undefined>(PUBLIC_ROUTE, targets) ?? false,
    rule,
    bodyScope: reflector.getAllAndOverride<BodyScope | undefined>(BODY_SCOPE, targets),
    unschedulable:
      reflector.getAllAndOverride<UnschedulableReason | undefined>(UNSCHEDULABLE, targets) ??
      (rule?.handsOutCredential ? HANDS_OUT_CREDENTIAL : undefined),
  };
}

/** Marks a route that needs no credential at all (health, discovery). */
export function Public(): MethodDecorator & ClassDecorator {
  return SetMetadata(PUBLIC_ROUTE, true);
}

export interface RequireScopeOptions extends Omit<RouteScope, 'scope'> {
  /**
   * The operation is "anonymous or bearer": the OpenAPI security is
   * `[{}, {bearer: []}]` (an open instance serves it without a credential). Enforcement is
   * unchanged: the guard still asks for the scope whenever the auth mode requires a credential.
   */
  anonymous?: boolean;
}

/**
 * Declares the scope a route requires; the global ScopeGuard enforces it and the
 * OpenAPI document shows it (`x-required-scope` and the bearer requirement).
 */
export function RequireScope(scope: string, { anonymous, ...options }: RequireScopeOptions = {}): MethodDecorator {
  return applyDecorators(
    SetMetadata(ROUTE_SCOPE, { scope, ...options } satisfies RouteScope),
    ...(anonymous ? [ApiSecurity({})] : []),
    ApiBearerAuth('bearer'),
    ApiExtension('x-required-scope', scope),
    ApiUnauthorizedResponse({ description: 'Missing or invalid credential', type: ErrorBodyDto }),
    ApiForbiddenResponse({ description: `Requires scope \`${scope}\``, type: ErrorBodyDto }),
  );
}
