import { ArgumentsHost, Catch, ExceptionFilter } from '@nestjs/common';
import { FastifyReply, FastifyRequest } from 'fastify';

import { renderError } from './render-error';

/** The global filter: every error a request raises leaves through renderError. */
@Catch()
export class HttpExceptionFilter implements ExceptionFilter {
  catch(exception: unknown, host: ArgumentsHost): void {
    const http = host.switchToHttp();
    const reply = http.getResponse<FastifyReply>();
    const rendered = renderError(exception, http.getRequest<FastifyRequest>());
    void reply
      .status(rendered.status)
      .headers(rendered.headers ?? {})
      .send(rendered.body);
  }
}
