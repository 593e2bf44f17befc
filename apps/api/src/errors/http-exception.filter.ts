import { randomUUID } from 'node:crypto';

import { ArgumentsHost, Catch, ExceptionFilter, HttpException, HttpStatus, Logger } from '@nestjs/common';
import { FastifyReply, FastifyRequest } from 'fastify';

import { AuthErrorCode } from '@app/auth';
import { isDatabaseUnavailable } from '@app/database';
import { ErrorBodyDto, ValidationErrorBodyDto, ValidationFailedException } from '@app/errors';

import { isKnownDomainException, statusOf } from './error-status';

interface RenderedError {
  status: number;
  body: ErrorBodyDto | ValidationErrorBodyDto;
  headers?: Record<string, string>;
}

/** Fastify's own request errors (bad JSON, wrong content type, oversized body) in plain words. */
const FRAMEWORK_DETAILS: Record<string, string> = {
  FST_ERR_CTP_INVALID_JSON_BODY: 'Request body is not valid JSON',
  FST_ERR_CTP_EMPTY_JSON_BODY: 'Request body is empty but Content-Type is application/json',
  FST_ERR_CTP_INVALID_MEDIA_TYPE: 'Unsupported Content-Type: send application/json',
  FST_ERR_CTP_BODY_TOO_LARGE: 'Request body is too large',
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: 'Content-Length does not match the body',
  FST_ERR_BAD_URL: 'Malformed URL',
};

/**
 * The one place an error becomes a response: the spec's `{detail, error_id?, error_type?}`
 * or the 422 array. Unknown errors become a 500 whose error_id is logged with the stack;
 * nothing about the failure itself reaches the client.
 */
@Catch()
export class HttpExceptionFilter implements ExceptionFilter {
  private readonly logger = new Logger('Errors');

  catch(exception: unknown, host: ArgumentsHost): void {
    const http = host.switchToHttp();
    const reply = http.getResponse<FastifyReply>();
    const request = http.getRequest<FastifyRequest>();
    const rendered = this.render(exception, request);
    void reply
      .status(rendered.status)
      .headers(rendered.headers ?? {})
      .send(rendered.body);
  }

  private render(exception: unknown, request: FastifyRequest): RenderedError {
    if (exception instanceof ValidationFailedException) {
      return { status: HttpStatus.UNPROCESSABLE_ENTITY, body: { detail: exception.issues } };
    }
    if (isKnownDomainException(exception)) {
      const status = statusOf(exception.code);
      const headers = exception.code === AuthErrorCode.Unauthenticated ? { 'www-authenticate': 'Bearer' } : undefined;
      return { status, body: { detail: exception.detail }, headers };
    }
    if (exception instanceof HttpException) {
      return this.renderHttpException(exception, request);
    }
    const frameworkStatus = (exception as { statusCode?: number }).statusCode;
    if (typeof frameworkStatus === 'number' && frameworkStatus >= 400 && frameworkStatus < 500) {
      const code = (exception as { code?: string }).code ?? '';
      return { status: frameworkStatus, body: { detail: FRAMEWORK_DETAILS[code] ?? (exception as Error).message } };
    }
    if (isDatabaseUnavailable(exception)) {
      this.logger.error(`Database unavailable: ${(exception as Error).message}`);
      return { status: HttpStatus.SERVICE_UNAVAILABLE, body: { detail: 'Database unavailable; try again shortly' } };
    }
    const errorId = randomUUID();
    this.logger.error(`Unhandled error ${errorId} on ${request.method} ${request.url}`, (exception as Error)?.stack ?? String(exception));
    return { status: HttpStatus.INTERNAL_SERVER_ERROR, body: { detail: 'Internal server error', error_id: errorId, error_type: 'internal_error' } };
  }

  private renderHttpException(exception: HttpException, request: FastifyRequest): RenderedError {
    const status = exception.getStatus();
    if (status === HttpStatus.NOT_FOUND && exception.message.startsWith('Cannot ')) {
      return { status, body: { detail: `No route for ${request.method} ${request.url.split('?')[0]}` } };
    }
    const response = exception.getResponse();
    const message = typeof response === 'string' ? response : (response as { message?: unknown }).message;
    return { status, body: { detail: Array.isArray(message) ? message.join('; ') : String(message ?? exception.message) } };
  }
}
