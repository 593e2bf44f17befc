import { createServer, IncomingMessage, Server, ServerResponse } from 'node:http';

import { INTERNAL_ERROR_BODY, noRouteDetail } from '@app/errors';

/** One route of a probe server: its status, its body (JSON unless a string), and a content type for a string. */
export type Probe = () => Promise<{ status: number; body: object | string; contentType?: string }>;

/** Told of a probe that threw: its 500 says nothing to the caller, so the reason goes to the log. */
export type ProbeFailed = (error: unknown, path: string) => void;

/**
 * A plain HTTP listener for orchestrators and scrapers, beside (or instead of) an app's own: GET or HEAD of
 * a fixed set of paths, without a credential (keep its port inside the cluster), and the error body of the
 * api for anything else. Resolves once listening; a taken port rejects with the listen error, carrying
 * `portVariable` (the variable that sets `port`) for the boot's one-line report.
 */
export async function listenProbes(
  routes: Record<string, Probe>,
  { port, portVariable, host }: { port: number; portVariable: string; host: string },
  failed: ProbeFailed,
): Promise<Server> {
  const server = createServer((request, response) => void answer(routes, failed, request, response));
  await new Promise<void>((resolve, reject) => {
    server.once('error', (error) => reject(Object.assign(error, { portVariable })));
    server.listen(port, host, resolve);
  });
  return server;
}

/** Closes a probe server and its connections (scrapers keep theirs alive). */
export async function closeProbes(server: Server): Promise<void> {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
}

async function answer(
  routes: Record<string, Probe>,
  failed: ProbeFailed,
  request: IncomingMessage,
  response: ServerResponse,
): Promise<void> {
  const path = (request.url ?? '/').split('?')[0];
  const probe = routes[path];
  let result: Awaited<ReturnType<Probe>>;
  if (!probe) {
    result = { status: 404, body: { detail: noRouteDetail(request.method, path) } };
  } else if (request.method !== 'GET' && request.method !== 'HEAD') {
    result = { status: 405, body: { detail: `Method ${request.method} not allowed on ${path}` } };
  } else {
    result = await probe().catch((error: unknown) => {
      failed(error, path);
      return { status: 500, body: INTERNAL_ERROR_BODY };
    });
  }
  const body = typeof result.body === 'string' ? result.body : JSON.stringify(result.body);
  response.writeHead(result.status, {
    'content-type': result.contentType ?? 'application/json; charset=utf-8',
    'cache-control': 'no-store',
  });
  response.end(request.method === 'HEAD' ? undefined : body);
}
