import { Injectable, RequestMethod } from '@nestjs/common';
import { METHOD_METADATA, PATH_METADATA } from '@nestjs/common/constants';
import { DiscoveryService, MetadataScanner, Reflector } from '@nestjs/core';

import { ROUTE_SCOPE, RouteScope } from '@app/auth';

function joinPath(...parts: (string | string[] | undefined)[]): string {
  const segments = parts.flatMap((part) => (Array.isArray(part) ? part.slice(0, 1) : [part ?? '']));
  return `/${segments.join('/')}`.replace(/\/+/g, '/').replace(/(.)\/$/, '$1');
}

/** The scope every REST route declares with @RequireScope, keyed `METHOD /path` (Nest's `:param` syntax). */
@Injectable()
export class RestRouteScopes {
  constructor(
    private readonly discovery: DiscoveryService,
    private readonly scanner: MetadataScanner,
    private readonly reflector: Reflector,
  ) {}

  collect(): Map<string, RouteScope> {
    const routes = new Map<string, RouteScope>();
    for (const wrapper of this.discovery.getControllers()) {
      const controller = wrapper.metatype as (new (...args: never[]) => object) | undefined;
      if (!controller) {
        continue;
      }
      const base = this.reflector.get<string | string[] | undefined>(PATH_METADATA, controller);
      for (const name of this.scanner.getAllMethodNames(controller.prototype)) {
        const handler = (controller.prototype as Record<string, unknown>)[name] as () => unknown;
        const method = this.reflector.get<RequestMethod | undefined>(METHOD_METADATA, handler);
        const scope = this.reflector.getAllAndOverride<RouteScope | undefined>(ROUTE_SCOPE, [handler, controller]);
        if (method !== undefined && scope) {
          routes.set(`${RequestMethod[method]} ${joinPath(base, this.reflector.get<string | string[]>(PATH_METADATA, handler))}`, scope);
        }
      }
    }
    return routes;
  }
}
