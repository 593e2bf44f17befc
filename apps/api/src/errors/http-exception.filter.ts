import { ArgumentsHost, Catch, ExceptionFilter } from '@nestjs/common';
import { RouteConfig } from '@nestjs/platform-fastify';
import { FastifyReply, FastifyRequest } from 'fastify';

import { isUnparsableJson, renderError } from './render-error';

/** Where a route keeps its own answer to a body that is not JSON (see AnswersUnparsableJson). */
interface UnparsableJsonConfig {
  unparsableJsonAnswer?: object;
}

/**
 * A route that speaks a protocol with its own word for a body that is not JSON (JSON-RPC's -32700 Parse error)
 * answers that, with 200, instead of the standard 400 body. Fastify parses the body before the route runs, so
 * this filter is where it is answered.
 */
export function AnswersUnparsableJson(answer: object): MethodDecorator {
  return RouteConfig({ unparsableJsonAnswer: answer } satisfies UnparsableJsonConfig);
}

/** The global filter: every error a request raises leaves through renderError. */
@Catch()
export class HttpExceptionFilter implements ExceptionFilter {
  catch(exception: unknown, host: ArgumentsHost): void {
    const http = host.switchToHttp();
    const reply = http.getResponse<FastifyReply>();
    const request = http.getRequest<FastifyRequest>();
    const ownAnswer = (request.routeOptions?.config as UnparsableJsonConfig | undefined)?.unparsableJsonAnswer;
    if (ownAnswer && isUnparsableJson(exception)) {
      void reply.status(200).send(ownAnswer);
      return;
    }
    const rendered = renderError(exception, request);
    void reply
      .status(rendered.status)
      .headers(rendered.headers ?? {})
      .send(rendered.body);
  }
}
