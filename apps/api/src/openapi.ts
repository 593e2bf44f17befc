import { STATUS_CODES } from 'node:http';

import { NestFastifyApplication } from '@nestjs/platform-fastify';
import { DocumentBuilder, OpenAPIObject, SwaggerModule } from '@nestjs/swagger';

import { ADMIN_SCOPE, isValidScope, missingScopeDetail } from '@app/access';
import { API_VERSION, Env } from '@app/config';
import { INTERNAL_ERROR_BODY } from '@app/errors';
import { WEBSOCKET_PATH, WEBSOCKET_PATH_ITEM } from '@app/websocket';

import { DATABASE_UNAVAILABLE_DETAIL, FRAMEWORK_DETAILS } from './errors/render-error';

function buildOpenApiDocument(app: NestFastifyApplication, env: Env): OpenAPIObject {
  const config = new DocumentBuilder()
    .setOpenAPIVersion('3.1.0')
    .setTitle(env.OS_NAME)
    .setDescription(
      'Runs agents, teams and workflows over REST, MCP, A2A and a WebSocket, with a durable job queue, schedules and service ' +
        'accounts. Authenticate with `Authorization: Bearer <credential>`: a JWT, a `svc_pat_` service-account token, or the OS ' +
        'security key. Each operation names the scope it requires in its 403 answer and under Extensions (`x-required-scope`). ' +
        'Times (`*_at`) are Unix times in seconds. The queue and schedule operations are declared "anonymous or bearer" (an ' +
        'instance without authentication serves them without a credential, as it does every route); where authentication is ' +
        'configured they need a credential like the rest.',
    )
    .setVersion(API_VERSION)
    // Only the address this page was loaded from: "Try it out" calls it whatever name reached the service. The page's
    // own policy (connect-src 'self') lets it call no other, so PUBLIC_URL listed here failed wherever it differed.
    .addServer('/', 'The address of this page')
    // In this order on the page: what a caller meets first, then the admin routes, then the other protocols.
    .addTag('discovery', 'Health, readiness, the instance descriptor, who you are, metrics')
    .addTag('agents', 'Run the agents; read and cancel their runs')
    .addTag('teams', 'Run the teams; read and cancel their runs')
    .addTag('workflows', 'Run the workflows; read and cancel their runs')
    .addTag('sessions', "Sessions and their runs (self-scoped: each caller sees its own, an admin everyone's)")
    .addTag('memories', 'Facts components keep about their users (self-scoped)')
    .addTag('traces', 'A trace per run, with its spans (self-scoped)')
    .addTag('service-accounts', 'Machine identities and their svc_pat_ tokens')
    .addTag('schedules', "Cron-driven calls to this service's own routes, made with their owner's rights")
    .addTag('queue', 'The durable job queue, for operators: platform:admin')
    .addTag('a2a', 'Agent2Agent: agent cards, JSON-RPC and the HTTP+JSON binding')
    .addTag('mcp', 'Model Context Protocol: the REST routes as tools')
    .addTag('websocket', 'Runs over one WebSocket')
    .addBearerAuth(
      {
        type: 'http',
        scheme: 'bearer',
        bearerFormat: 'svc_pat_ token, JWT or OS security key',
        description:
          'Paste the credential alone, without "Bearer": a `svc_pat_` service-account token, a JWT, or the OS security key. It stays in this page only, and is gone when the page is closed or reloaded.',
      },
      'bearer',
    )
    .build();
  const document = SwaggerModule.createDocument(app, config, { operationIdFactory: operationId });
  // Fastify's own route (see RunSocketGateway): Nest's scanner does not see it.
  document.paths[WEBSOCKET_PATH] = WEBSOCKET_PATH_ITEM as OpenAPIObject['paths'][string];
  return withTimesDescribed(
    withValidationExamples(withErrorExamples(withPublicOperationsMarked(withAnswersEveryRouteGives(document))), document),
  );
}

/**
 * `queueList`, `serviceAccountsMint`: one camelCase word per operation. Nest's default (`QueueController_list`) puts
 * an underscore in every deep link (/docs#/queue/...), which Swagger UI reads as escaped whitespace and warns about.
 */
function operationId(controllerKey: string, methodKey: string): string {
  const controller = controllerKey.replace(/Controller$/, '');
  return `${controller[0].toLowerCase()}${controller.slice(1)}${methodKey[0].toUpperCase()}${methodKey.slice(1)}`;
}

type Response = { description?: string; content?: Record<string, { schema?: { $ref?: string }; example?: unknown }> };
type Operation = {
  responses?: Record<string, Response>;
  parameters?: { in: string; name: string }[];
  requestBody?: { content?: Record<string, { schema?: { $ref?: string } }> };
  security?: unknown[];
  'x-required-scope'?: string;
};

/** The methods whose routes may be sent a body: each answers one of a media type it does not take with 415. */
export const TAKES_BODY = new Set(['POST', 'PUT', 'PATCH']);

const errorBody = (): Response => ({ content: { 'application/json': { schema: { $ref: '#/components/schemas/ErrorBodyDto' } } } });

/**
 * The answers that come from the rules every route shares rather than from the route itself, stated where
 * they apply: a route taking a credential can answer 429 (too many failed token lookups) and 503 (the
 * database unreachable); one taking a body, 413 for one over the limit; one taking a JSON body, 400 for a body that is
 * not JSON; a POST, PUT or PATCH, 415 for a media type it does not take (a form, on a route that takes none). And 422 only where there is
 * something to validate, a body or a query: a malformed path id is a 404 (see the validation pipe). Any
 * route can fail unexpectedly: 500, with the error_id its log line carries.
 */
function withAnswersEveryRouteGives(document: OpenAPIObject): OpenAPIObject {
  for (const [method, operation] of operationsWithMethods(document)) {
    const responses = operation.responses!;
    responses['500'] ??= errorBody();
    // A WebSocket (101) judges its credential after the upgrade, in frames.
    if (operation['x-required-scope'] !== undefined && !responses['101']) {
      responses['429'] ??= errorBody();
      responses['503'] ??= errorBody();
    }
    if (operation.requestBody) {
      responses['413'] ??= errorBody();
    }
    if (operation.requestBody?.content?.['application/json']) {
      responses['400'] ??= errorBody();
    }
    // A form is refused wherever the route takes no form, a route with no body at all included.
    if (TAKES_BODY.has(method.toUpperCase())) {
      responses['415'] ??= errorBody();
    }
    if (!operation.requestBody && !operation.parameters?.some((parameter) => parameter.in === 'query')) {
      delete responses['422'];
    }
  }
  return document;
}

function operationsWithMethods(document: OpenAPIObject): [method: string, operation: Operation][] {
  return Object.values(document.paths).flatMap((item) =>
    Object.entries(item as Record<string, Operation>).filter(([, operation]) => operation?.responses),
  );
}

function operationsOf(document: OpenAPIObject): Operation[] {
  return operationsWithMethods(document).map(([, operation]) => operation);
}

/** Each error status in general: a route's own description says what it means there. */
const ERRORS: Record<string, { description: string; detail: (operation: Operation) => string | null; example?: object }> = {
  '400': { description: 'Bad request', detail: () => 'Request body is not valid JSON' },
  '401': { description: 'Missing or invalid credential', detail: () => 'Authorization header required' },
  '403': {
    description: 'The credential lacks the scope',
    // The extension may describe several (A2A's JSON-RPC): its first scope makes the example. A route whose 403
    // is about something else (/mcp's Origin rule) names no scope and keeps its own description.
    detail: (operation) => {
      const scope = operation['x-required-scope']?.split(' ')[0] ?? ADMIN_SCOPE;
      return isValidScope(scope) ? missingScopeDetail(scope) : null;
    },
  },
  '404': { description: 'Not found, or not visible to the caller', detail: () => 'Not found' },
  '409': { description: 'Conflicts with the current state', detail: () => 'Conflicts with the current state' },
  '413': { description: 'The body is over the 1 MiB the api takes', detail: () => FRAMEWORK_DETAILS.FST_ERR_CTP_BODY_TOO_LARGE },
  '415': { description: 'The body is not of a media type the route takes', detail: () => FRAMEWORK_DETAILS.FST_ERR_CTP_INVALID_MEDIA_TYPE },
  '429': { description: 'Too many failed token lookups from this client address', detail: () => 'Too many failed authentication attempts' },
  '500': {
    description: "Unexpected failure: nothing of it reaches the client; the server's log has it under the error_id",
    detail: () => INTERNAL_ERROR_BODY.detail,
    example: { ...INTERNAL_ERROR_BODY, error_id: '0b3c0c5e-4f5a-4c53-9a43-2f4be1e4c8d1' },
  },
  '503': { description: 'The database is unavailable', detail: () => DATABASE_UNAVAILABLE_DETAIL },
};

/** Statuses whose detail is set whatever the route's description says: it names the credential or its scope, the size or the media type. */
const SET_DETAIL = new Set(['401', '403', '413', '415', '429']);

/**
 * Every error response shows a body the api sends with that status (`{"detail": ...}`; `error_id` only on
 * a 500), rather than one example body for all of them; and no response is left without a description.
 */
function withErrorExamples(document: OpenAPIObject): OpenAPIObject {
  for (const operation of operationsOf(document)) {
    for (const [status, response] of Object.entries(operation.responses ?? {})) {
      const general = ERRORS[status];
      const json = response.content?.['application/json'];
      if (general && json?.schema?.$ref?.endsWith('/ErrorBodyDto')) {
        const setDetail = SET_DETAIL.has(status) ? general.detail(operation) : null;
        const detail = setDetail ?? (response.description || general.detail(operation) || general.description);
        response.description ||= general.description;
        json.example ??= general.example ?? { detail };
      }
      response.description ||= STATUS_CODES[status] ?? '';
    }
  }
  return document;
}

/**
 * A 422 example naming a field the operation really has: its body's first field, else its first query parameter
 * (the shared schema's own example names a body field `name` that most operations do not take).
 */
function withValidationExamples(document: OpenAPIObject, { components }: OpenAPIObject): OpenAPIObject {
  for (const operation of operationsOf(document)) {
    const response = operation.responses?.['422'];
    const json = response?.content?.['application/json'];
    if (!json?.schema?.$ref?.endsWith('/ValidationErrorBodyDto')) {
      continue;
    }
    const bodyRef = Object.values(operation.requestBody?.content ?? {})[0]?.schema?.$ref;
    const bodyField = bodyRef
      ? Object.keys((components?.schemas?.[bodyRef.split('/').pop()!] as { properties?: object })?.properties ?? {})[0]
      : undefined;
    const queryField = operation.parameters?.find((parameter) => parameter.in === 'query')?.name;
    const loc = bodyField ? ['body', bodyField] : queryField ? ['query', queryField] : null;
    if (loc) {
      const issue = {
        loc,
        msg: `${loc[1]} is not valid (what is wrong with it, in words)`,
        type: 'the rule it broke',
        input: null,
        ctx: {},
      };
      // Its own copy: a controller-wide response is one object shared by all the controller's operations.
      operation.responses!['422'] = { ...response, content: { 'application/json': { ...json, example: { detail: [issue] } } } };
    }
  }
  return document;
}

/** Every time the api answers (`created_at`, `expires_at`, ...) is an integer of Unix seconds: each says so. */
function withTimesDescribed(document: OpenAPIObject): OpenAPIObject {
  for (const schema of Object.values(document.components?.schemas ?? {}) as { properties?: Record<string, PropertySchema> }[]) {
    for (const [name, property] of Object.entries(schema.properties ?? {})) {
      const integer = property.type === 'integer' || (Array.isArray(property.type) && property.type.includes('integer'));
      if (name.endsWith('_at') && integer && !/seconds/i.test(property.description ?? '')) {
        property.description = property.description ? `${property.description} (Unix time, seconds)` : 'Unix time, seconds';
      }
    }
  }
  return document;
}

type PropertySchema = { type?: string | string[]; description?: string };

/** An operation without a required scope is public: say so with `security: []` rather than by omission. */
function withPublicOperationsMarked(document: OpenAPIObject): OpenAPIObject {
  for (const operation of operationsOf(document)) {
    if (operation.security === undefined && operation['x-required-scope'] === undefined) {
      operation.security = [];
    }
  }
  return document;
}

/**
 * Swagger UI at /docs, the JSON at /openapi.json. Authorize keeps the pasted credential in the page's
 * memory only (persistAuthorization off): stored in localStorage it would outlive the tab and be readable
 * by any script that ever runs on this origin.
 */
export function mountDocs(app: NestFastifyApplication, env: Env): void {
  // The page links its assets relative to /docs: at /docs/ they resolve under /docs/docs/ and the page stays
  // blank. Registered first, this route takes /docs/ from Swagger UI's own (which tolerates the clash). The
  // redirect is relative, so it holds behind a proxy that serves the api under a path prefix.
  app
    .getHttpAdapter()
    .getInstance()
    .get('/docs/', (request, reply) => reply.redirect(`../docs${request.url.slice('/docs/'.length)}`, 301));
  SwaggerModule.setup('docs', app, () => buildOpenApiDocument(app, env), {
    jsonDocumentUrl: 'openapi.json',
    raw: ['json'],
    customSiteTitle: `${env.OS_NAME} API`,
    // showExtensions: each operation's x-required-scope shows under it.
    swaggerOptions: { persistAuthorization: false, showExtensions: true },
  });
}
