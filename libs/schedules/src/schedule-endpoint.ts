/** The route a schedule's call reaches, as the api declares it. */
export interface EndpointRoute {
  /** `METHOD /path` in the router's `:param` syntax, e.g. `POST /agents/:agent_id/runs`. */
  route: string;
  /** The scope the call needs, narrowed to the component its path names; null for a public route. */
  scope: string | null;
  /** Why a schedule cannot call this route at all, when it cannot. */
  unschedulable?: string;
}

/**
 * What the api knows of its own routes, so a schedule can be checked against the call it will make.
 * The auth module provides it; the schedules module only asks.
 */
export abstract class EndpointScopes {
  /** The route that answers `method endpoint` on this service, or null when none does; `body` decides the scope of a route whose methods share one URL. */
  abstract routeOf(method: string, endpoint: string, body?: unknown): EndpointRoute | null;
}

/**
 * A schedule's endpoint as the api will receive it: path and query after URL normalisation
 * (dot segments resolved, unsafe characters percent-encoded), exactly what `fetch` sends.
 */
export function normalizedEndpoint(endpoint: string): string {
  // Appended to a base as the worker does, never resolved against it: `//host/x` stays a path.
  const url = new URL(`http://service.invalid${endpoint}`);
  return `${url.pathname}${url.search}`;
}

/**
 * The path the api's router matches for `endpoint`: normalised, without its query, each segment decoded (an
 * encoded `/` stays `%2F`, inside its segment, as the router keeps it); null when an escape is malformed (the
 * api answers such a path 400 before any route).
 */
export function routedPath(endpoint: string): string | null {
  try {
    return normalizedEndpoint(endpoint)
      .split('?')[0]
      .split('/')
      .map((segment) => decodeURIComponent(segment).replaceAll('/', '%2F'))
      .join('/');
  } catch {
    return null;
  }
}
