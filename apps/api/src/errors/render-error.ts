import { randomUUID } from 'node:crypto';

import { HttpException, HttpStatus, Logger } from '@nestjs/common';

import { AuthErrorCode, AuthException } from '@app/auth';
import { isDatabaseUnavailable, isSchemaMismatch } from '@app/database';
import { ErrorBodyDto, INTERNAL_ERROR_BODY, noRouteDetail, ValidationErrorBodyDto, ValidationFailedException } from '@app/errors';
import { loggableUrl } from '@app/logging';

import { isKnownDomainException, statusOf } from './error-status';

export interface RenderedError {
  status: number;
  body: ErrorBodyDto | ValidationErrorBodyDto;
  headers?: Record<string, string>;
}

/** What an error is rendered about: the HTTP request, or the MCP tool call. */
export interface ErrorContext {
  method: string;
  url: string;
}

/** The code of a JSON body refused for a `__proto__` or `constructor.prototype` key (the JSON parser's check). */
export const FORBIDDEN_JSON_KEY = 'PLATFORM_FORBIDDEN_JSON_KEY';

/** Fastify's own request errors (bad JSON, wrong content type, oversized body) in plain words. */
export const FRAMEWORK_DETAILS: Record<string, string> = {
  FST_ERR_CTP_INVALID_JSON_BODY: 'Request body is not valid JSON',
  [FORBIDDEN_JSON_KEY]: 'Request body holds a __proto__ or constructor.prototype key, refused for safety: rename it',
  FST_ERR_CTP_EMPTY_JSON_BODY: 'Request body is empty but Content-Type is application/json',
  FST_ERR_CTP_INVALID_MEDIA_TYPE: 'Unsupported Content-Type: send application/json',
  FST_ERR_CTP_BODY_TOO_LARGE: 'Request body is too large',
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: 'Content-Length does not match the body',
  FST_ERR_BAD_URL: 'Malformed URL',
  FST_ERR_MAX_PARAM_LENGTH: 'Path parameter is too long',
  FST_FILES_LIMIT: 'Files are not accepted: send the form fields only',
  FST_FIELDS_LIMIT: 'Too many form fields',
  FST_PARTS_LIMIT: 'Too many form parts',
};

const logger = new Logger('Errors');

export const DATABASE_UNAVAILABLE_DETAIL = 'Database unavailable; try again shortly';
const SCHEMA_MISMATCH_DETAIL = "Database not ready: its schema does not match this build's (migrations pending); try again shortly";

/**
 * The one place an error becomes a status and the standard `{detail, error_id?, error_type?}` body or the
 * 422 array, for REST responses and MCP tool errors alike. Unknown errors become a 500 whose
 * error_id is logged with the stack; nothing about the failure itself reaches the client.
 */
export function renderError(exception: unknown, context: ErrorContext): RenderedError {
  if (exception instanceof ValidationFailedException) {
    return { status: HttpStatus.UNPROCESSABLE_ENTITY, body: { detail: exception.issues } };
  }
  if (isKnownDomainException(exception)) {
    const status = statusOf(exception.code);
    const headers =
      exception instanceof AuthException && exception.code === AuthErrorCode.Unauthenticated
        ? { 'www-authenticate': exception.challenge }
        : undefined;
    return { status, body: { detail: exception.detail }, headers };
  }
  const framework = fastifyClientError(exception);
  if (framework) {
    return { status: framework.statusCode, body: { detail: FRAMEWORK_DETAILS[framework.code ?? ''] ?? framework.message } };
  }
  if (exception instanceof HttpException) {
    return renderHttpException(exception, context);
  }
  if (isDatabaseUnavailable(exception)) {
    logger.error({ err: exception }, 'Database unavailable');
    return { status: HttpStatus.SERVICE_UNAVAILABLE, body: { detail: DATABASE_UNAVAILABLE_DETAIL } };
  }
  // A request that reached an api before the migrate role finished (readiness keeps most away): it passes, as an outage does.
  if (isSchemaMismatch(exception)) {
    logger.error({ err: exception, method: context.method, url: loggableUrl(context.url) }, 'Database schema does not match this build');
    return { status: HttpStatus.SERVICE_UNAVAILABLE, body: { detail: SCHEMA_MISMATCH_DETAIL } };
  }
  const errorId = randomUUID();
  logger.error({ err: exception, error_id: errorId, method: context.method, url: loggableUrl(context.url) }, 'Unhandled error');
  return { status: HttpStatus.INTERNAL_SERVER_ERROR, body: { ...INTERNAL_ERROR_BODY, error_id: errorId } };
}

/** A request whose body was declared JSON and is not (or is empty). */
export function badJsonOf(exception: unknown): 'unparsable' | 'forbiddenKey' | null {
  const code = fastifyClientError(exception)?.code;
  if (code === FORBIDDEN_JSON_KEY) {
    return 'forbiddenKey';
  }
  return code === 'FST_ERR_CTP_INVALID_JSON_BODY' || code === 'FST_ERR_CTP_EMPTY_JSON_BODY' ? 'unparsable' : null;
}

/**
 * One of Fastify's own request errors (a body that is not JSON, a wrong content type), as it comes or as Nest's
 * Fastify adapter hands it on: wrapped in an HttpException carrying Fastify's wording.
 */
function fastifyClientError(exception: unknown): { statusCode: number; code?: string; message: string } | null {
  const error = (exception instanceof HttpException ? exception.cause : exception) as { statusCode?: unknown } | undefined;
  const status = error?.statusCode;
  return typeof status === 'number' && status >= 400 && status < 500
    ? (error as { statusCode: number; code?: string; message: string })
    : null;
}

function renderHttpException(exception: HttpException, context: ErrorContext): RenderedError {
  const status = exception.getStatus();
  if (status === HttpStatus.NOT_FOUND && exception.message.startsWith('Cannot ')) {
    return { status, body: { detail: noRouteDetail(context.method, context.url.split('?')[0]) } };
  }
  const response = exception.getResponse();
  const message = typeof response === 'string' ? response : (response as { message?: unknown }).message;
  return { status, body: { detail: Array.isArray(message) ? message.join('; ') : String(message ?? exception.message) } };
}
