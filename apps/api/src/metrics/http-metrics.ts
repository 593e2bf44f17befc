import { FastifyInstance } from 'fastify';
import { Histogram, Registry } from 'prom-client';

/** The label of a request no route matched (404s, scanners): one series, whatever the URL. */
const UNMATCHED_ROUTE = 'unmatched';

/**
 * Times every request into `http_request_duration_seconds`, labelled by the route's pattern
 * (`/agents/:agent_id/runs`), never the raw URL, so the series stay few whatever ids callers send.
 */
export function recordRequestDurations(fastify: FastifyInstance, registry: Registry): void {
  const durations = new Histogram({
    name: 'http_request_duration_seconds',
    help: 'HTTP request duration until the response is sent, by method, route pattern and status',
    labelNames: ['method', 'route', 'status'],
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [registry],
  });
  fastify.addHook('onResponse', async (request, reply) => {
    durations.observe(
      { method: request.method, route: request.routeOptions.url ?? UNMATCHED_ROUTE, status: reply.statusCode },
      reply.elapsedTime / 1000,
    );
  });
}
