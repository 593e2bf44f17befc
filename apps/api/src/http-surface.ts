import { IncomingMessage, ServerResponse } from 'node:http';

import { Logger } from '@nestjs/common';
import { NestFastifyApplication } from '@nestjs/platform-fastify';
import { FastifyReply, FastifyRequest } from 'fastify';
import helmetHeaders, { HelmetOptions } from 'helmet';

import { AuthMode } from '@app/auth';
import { Env, isAllowedOrigin, isLoopbackHost, listensOnLoopbackOnly } from '@app/config';

import { FORBIDDEN_JSON_KEY, FRAMEWORK_DETAILS } from './errors/render-error';

/**
 * What the api's responses allow a browser to do with them. Swagger UI at /docs is the only HTML the api
 * serves: its page loads swagger-ui-bundle.js, the preset and swagger-ui-init.js from /docs itself (no
 * inline script), and carries inline <style> blocks and style attributes (hence 'unsafe-inline' for
 * styles only), and its CSS draws icons from data: URLs. "Try it out" fetches this origin. Nothing may
 * frame any response (clickjacking), and forms and <base> cannot point elsewhere.
 */
const CONTENT_SECURITY_POLICY = {
  defaultSrc: ["'self'"],
  scriptSrc: ["'self'"],
  styleSrc: ["'self'", "'unsafe-inline'"],
  imgSrc: ["'self'", 'data:'],
  fontSrc: ["'self'", 'data:'],
  connectSrc: ["'self'"],
  objectSrc: ["'none'"],
  frameAncestors: ["'none'"],
  baseUri: ["'none'"],
  formAction: ["'self'"],
};

/**
 * Security headers on every response, from helmet: nosniff, no Referer, no framing
 * (X-Frame-Options: DENY and frame-ancestors 'none'), the CSP above. No Strict-Transport-Security and no
 * upgrade-insecure-requests: the api speaks plain HTTP and TLS belongs to whatever terminates it, which
 * decides about HSTS for its whole host name.
 */
const SECURITY_HEADERS: HelmetOptions = {
  contentSecurityPolicy: { useDefaults: false, directives: CONTENT_SECURITY_POLICY },
  frameguard: { action: 'deny' },
  referrerPolicy: { policy: 'no-referrer' },
  strictTransportSecurity: false,
};

/** Built once: helmet turns the options into header values when called, not per response. */
const setHelmetHeaders = helmetHeaders(SECURITY_HEADERS);

/**
 * Plus `Cache-Control: no-store`: a response may carry a plaintext token (mint, rotate) or a user's data, and no
 * proxy or browser cache should keep it. A route that sets its own Cache-Control (the docs' static files) wins.
 */
function setSecurityHeaders(request: IncomingMessage, response: ServerResponse, done: () => void): void {
  response.setHeader('cache-control', 'no-store');
  setHelmetHeaders(request, response, done);
}

/**
 * On every response. helmet's own Fastify plugin rebuilds the middleware (and re-parses the CSP) for
 * every request; the headers never change, so one middleware serves them all.
 */
function registerSecurityHeaders(app: NestFastifyApplication): void {
  app
    .getHttpAdapter()
    .getInstance()
    .addHook('onRequest', (request: FastifyRequest, reply: FastifyReply, done: () => void) =>
      setSecurityHeaders(request.raw, reply.raw, done),
    );
}

/**
 * The same headers for a reply that no hook sees: Fastify answers a malformed URL from its router
 * (the adapter's frameworkErrors), before any onRequest hook runs.
 */
export function addSecurityHeaders(reply: FastifyReply): void {
  setSecurityHeaders(reply.request.raw, reply.raw, () => undefined);
}

/**
 * Probes that must answer whatever Host they send: Kubernetes' httpGet probes address the pod IP. They
 * carry no data worth a rebinding attack (liveness, and readiness with the database's state).
 */
const HOST_CHECK_EXEMPT = new Set(['/health', '/readyz']);
const logger = new Logger('HttpSurface');

/**
 * The Host names an instance without authentication answers, against DNS rebinding: a page on
 * evil.example whose name is re-pointed at 127.0.0.1 (or at this instance's address) is same-origin
 * with its own scripts, which could otherwise drive an open instance from a victim's browser. Allowed:
 * a loopback name or address (localhost, 127.0.0.0/8, [::1]) on any port, and PUBLIC_URL's host and port
 * (by default http://HOST:PORT). Null when any Host is answered (an auth mode: credentials protect it).
 */
export function hostRule(env: Env, mode: AuthMode): ((host: string | undefined) => boolean) | null {
  if (mode !== 'none') {
    return null;
  }
  const publicUrl = new URL(env.publicUrl);
  return (host) => {
    if (!host) {
      return false;
    }
    let given: URL;
    try {
      // Parsed as a URL of PUBLIC_URL's scheme: names are lower-cased, IPv4 spellings and default ports
      // normalised, so `Platform.Example:443` matches https://platform.example.
      given = new URL(`${publicUrl.protocol}//${host}`);
    } catch {
      return false;
    }
    if (given.username || given.password || given.pathname !== '/' || given.search || given.hash) {
      return false;
    }
    return isLoopbackHost(given.hostname) || given.host === publicUrl.host;
  };
}

/**
 * Requests with an empty body carry no body, whatever their Content-Type says: many clients send
 * `Content-Type: application/json` on every request, and a route without a body must not answer 400 for
 * it. A route that needs a body sees exactly what a request without one gives it (its validation error).
 */
function acceptEmptyBodies(app: NestFastifyApplication, bodyLimit: number): void {
  const fastify = app.getHttpAdapter().getInstance();
  // Content-Length: 0 with any Content-Type: Fastify then treats the request as bodiless, as without
  // the header, and no content-type parser runs (so no 400 "empty JSON" and no 415).
  fastify.addHook('onRequest', async (request) => {
    const headers = request.raw.headers;
    if (headers['content-length'] === '0' && headers['transfer-encoding'] === undefined) {
      delete headers['content-type'];
    }
  });
  // A chunked body that turns out empty reaches the JSON parser: undefined, as above. Anything else
  // goes to Fastify's own parser (prototype-poisoning checks included), so malformed JSON stays a 400.
  const { onProtoPoisoning, onConstructorPoisoning } = fastify.initialConfig as {
    onProtoPoisoning?: 'error';
    onConstructorPoisoning?: 'error';
  };
  const parseJson = fastify.getDefaultJsonParser(onProtoPoisoning ?? 'error', onConstructorPoisoning ?? 'error');
  // A2A clients may name their JSON by A2A's own media type.
  app.useBodyParser(['application/json', 'application/a2a+json'], { bodyLimit }, (request, body, done) => {
    if (body.length === 0) {
      done(null, undefined);
      return;
    }
    const text = body.toString('utf8');
    void parseJson(request as FastifyRequest, text, (error, parsed) =>
      done(error && holdsForbiddenKey(text) ? new ForbiddenJsonKeyError() : error, parsed),
    );
  });
}

/** Whether a body Fastify refused is JSON after all, holding a key its prototype-poisoning check refuses. */
function holdsForbiddenKey(text: string): boolean {
  let found = false;
  try {
    JSON.parse(text, (key, value: unknown) => {
      found ||= key === '__proto__' || (key === 'constructor' && typeof value === 'object' && value !== null && 'prototype' in value);
      return value;
    });
  } catch {
    return false;
  }
  return found;
}

/** JSON with a `__proto__` or `constructor.prototype` key: refused for safety, and not called invalid JSON. */
class ForbiddenJsonKeyError extends Error {
  readonly statusCode = 400;
  readonly code = FORBIDDEN_JSON_KEY;

  constructor() {
    super(FRAMEWORK_DETAILS[FORBIDDEN_JSON_KEY]);
  }
}

/** Methods a browser may send cross-site without asking first (a form, a link): none of our routes changes anything on them. */
const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * An instance without authentication serves whoever reaches it, so it refuses what a browser could send for
 * another site: a Host it does not serve (DNS rebinding, see hostRule), and a change requested by a page of
 * another origin. A page anywhere may submit a form to http://127.0.0.1:7777 (no preflight: a form's body is
 * urlencoded or multipart, which the run routes accept) and would start runs or store memories as the
 * anonymous user. Browsers name the page's origin on every such request; clients that are not pages send none.
 */
function guardOpenInstance(app: NestFastifyApplication, env: Env, mode: AuthMode): void {
  const allowed = hostRule(env, mode);
  if (!allowed) {
    return;
  }
  // The Host and Origin rules stop browsers, not other clients: those can name any Host.
  if (!listensOnLoopbackOnly(env.HOST)) {
    logger.warn(
      `No OS_SECURITY_KEY or JWT key, and listening on ${env.HOST}: anyone who can reach port ${env.PORT} can use this api ` +
        'as the anonymous user. Set OS_SECURITY_KEY or a JWT key, or HOST=127.0.0.1 (in a container: publish the port on the ' +
        "host's loopback only, -p 127.0.0.1:7777:7777)",
    );
  }
  app
    .getHttpAdapter()
    .getInstance()
    .addHook('onRequest', async (request: FastifyRequest, reply: FastifyReply) => {
      if (HOST_CHECK_EXEMPT.has(request.url.split('?')[0])) {
        return;
      }
      // The lines carry the request id already: this hook runs inside the request's logging context.
      if (!allowed(request.headers.host)) {
        const host = String(request.headers.host ?? '').slice(0, 100);
        logger.warn({ host }, 'refused a request for a Host this open instance does not serve');
        return reply.code(403).send({
          detail:
            `Host '${host}' is not allowed on an instance without authentication; ` +
            'set PUBLIC_URL to the address clients use, or configure OS_SECURITY_KEY or a JWT key',
        });
      }
      if (!SAFE_METHODS.has(request.method) && !isAllowedOrigin(request.headers.origin, env.publicUrl)) {
        const origin = String(request.headers.origin).slice(0, 100);
        logger.warn({ origin, method: request.method }, 'refused a change a page of another origin asked of this open instance');
        return reply.code(403).send({
          detail:
            `A page of origin '${origin}' may not change an instance without authentication; ` +
            "call it from this instance's own origin or a client that is not a browser page, or configure OS_SECURITY_KEY or a JWT key",
        });
      }
    });
}

/** The rules every route shares, registered before any route or plugin so that they reach all of them. */
export async function registerHttpSurface(app: NestFastifyApplication, env: Env, mode: AuthMode, bodyLimit: number): Promise<void> {
  registerSecurityHeaders(app);
  guardOpenInstance(app, env, mode);
  acceptEmptyBodies(app, bodyLimit);
}
