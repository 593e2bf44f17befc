import { Injectable, RequestMethod } from '@nestjs/common';
import { METHOD_METADATA, PATH_METADATA } from '@nestjs/common/constants';
import { DiscoveryService, MetadataScanner, Reflector } from '@nestjs/core';
import FindMyWay, { HTTPMethod } from 'find-my-way';

import { EndpointRoute, EndpointScopes, normalizedEndpoint } from '@app/schedules';

import { BodyScope, requiredScope, routeDeclaration, RouteScope, UnschedulableReason } from './scopes.decorator';

function joinPath(...parts: (string | string[] | undefined)[]): string {
  const segments = parts.flatMap((part) => (Array.isArray(part) ? part.slice(0, 1) : [part ?? '']));
  return `/${segments.join('/')}`.replace(/\/+/g, '/').replace(/(.)\/$/, '$1');
}

interface DeclaredRoute {
  method: string;
  path: string;
  /** Null for a @Public route. */
  rule: RouteScope | null;
  /** A @Public route that checks a scope decided by the body itself. */
  bodyScope?: BodyScope;
  /** Why a schedule cannot call it (@Unschedulable). */
  unschedulable?: UnschedulableReason;
}

/**
 * The app's routes and the scope each declares (@RequireScope, @ScopeFromBody or @Public), read from the
 * controllers' metadata. MCP tools bind to them at boot; schedules ask which route, and so
 * which scope, a call will reach, matched with the router Fastify itself uses.
 */
@Injectable()
export class RouteScopes extends EndpointScopes {
  private router: FindMyWay.Instance<FindMyWay.HTTPVersion.V1> | null = null;

  constructor(
    private readonly discovery: DiscoveryService,
    private readonly scanner: MetadataScanner,
    private readonly reflector: Reflector,
  ) {
    super();
  }

  /** The scope of every route declaring @RequireScope, keyed `METHOD /path` (Nest's `:param` syntax). */
  collect(): Map<string, RouteScope> {
    return new Map(this.declared().flatMap(({ method, path, rule }) => (rule ? [[`${method} ${path}`, rule] as const] : [])));
  }

  routeOf(method: string, endpoint: string, body?: unknown): EndpointRoute | null {
    const pathname = normalizedEndpoint(endpoint).split('?')[0];
    const found = this.matcher().find(method.toUpperCase() as HTTPMethod, pathname);
    if (!found) {
      return null;
    }
    const route = found.store as DeclaredRoute;
    const scope = route.rule ? requiredScope(route.rule, found.params) : (route.bodyScope?.(found.params, body) ?? null);
    const unschedulable = route.unschedulable?.(body);
    return { route: `${route.method} ${route.path}`, scope, ...(unschedulable ? { unschedulable } : {}) };
  }

  private matcher(): FindMyWay.Instance<FindMyWay.HTTPVersion.V1> {
    if (!this.router) {
      const router = FindMyWay();
      for (const route of this.declared()) {
        if (route.method === 'ALL') {
          router.all(route.path, () => undefined, route);
        } else {
          router.on(route.method as HTTPMethod, route.path, () => undefined, route);
        }
      }
      this.router = router;
    }
    return this.router;
  }

  private declared(): DeclaredRoute[] {
    const routes: DeclaredRoute[] = [];
    for (const wrapper of this.discovery.getControllers()) {
      const controller = wrapper.metatype as (new (...args: never[]) => object) | undefined;
      if (!controller) {
        continue;
      }
      const base = this.reflector.get<string | string[] | undefined>(PATH_METADATA, controller);
      for (const name of this.scanner.getAllMethodNames(controller.prototype)) {
        const handler = (controller.prototype as Record<string, unknown>)[name] as () => unknown;
        const method = this.reflector.get<RequestMethod | undefined>(METHOD_METADATA, handler);
        if (method === undefined) {
          continue;
        }
        const { rule, isPublic, bodyScope, unschedulable } = routeDeclaration(this.reflector, handler, controller);
        if (rule || isPublic || bodyScope) {
          const path = joinPath(base, this.reflector.get<string | string[]>(PATH_METADATA, handler));
          routes.push({
            method: RequestMethod[method],
            path,
            rule: rule ?? null,
            ...(bodyScope ? { bodyScope } : {}),
            ...(unschedulable ? { unschedulable } : {}),
          });
        }
      }
    }
    return routes;
  }
}
