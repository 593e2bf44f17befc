import { NestFastifyApplication } from '@nestjs/platform-fastify';
import { DocumentBuilder, OpenAPIObject, SwaggerModule } from '@nestjs/swagger';

import { API_VERSION, Env } from '@app/config';
import { WEBSOCKET_PATH, WEBSOCKET_PATH_ITEM } from '@app/websocket';

export function buildOpenApiDocument(app: NestFastifyApplication, env: Env): OpenAPIObject {
  const config = new DocumentBuilder()
    .setOpenAPIVersion('3.1.0')
    .setTitle(env.OS_NAME)
    .setDescription(
      'Durable job queue, schedules, service accounts and MCP. Authenticate with `Authorization: Bearer <credential>`: ' +
        'a JWT, a `svc_pat_` service-account token, or the OS security key. Each operation lists the scope it requires (`x-required-scope`).',
    )
    .setVersion(API_VERSION)
    .addServer(env.publicUrl, 'This service (PUBLIC_URL)')
    .addBearerAuth(
      {
        type: 'http',
        scheme: 'bearer',
        bearerFormat: 'svc_pat_ token, JWT or OS security key',
        description: 'JWT, svc_pat_ token, or the OS security key',
      },
      'bearer',
    )
    .build();
  const document = SwaggerModule.createDocument(app, config);
  // Fastify's own route (see RunSocketGateway): Nest's scanner does not see it.
  document.paths[WEBSOCKET_PATH] = WEBSOCKET_PATH_ITEM as OpenAPIObject['paths'][string];
  return withPublicOperationsMarked(document);
}

/** An operation without a required scope is public: say so with `security: []` rather than by omission. */
function withPublicOperationsMarked(document: OpenAPIObject): OpenAPIObject {
  for (const item of Object.values(document.paths)) {
    for (const operation of Object.values(
      item as Record<string, { responses?: unknown; security?: unknown[]; 'x-required-scope'?: string }>,
    )) {
      if (operation?.responses && operation.security === undefined && operation['x-required-scope'] === undefined) {
        operation.security = [];
      }
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
    swaggerOptions: { persistAuthorization: false },
  });
}
