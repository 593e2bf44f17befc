import { ArgumentsHost, Catch, ExceptionFilter } from '@nestjs/common';
import { RouteConfig } from '@nestjs/platform-fastify';
import { FastifyReply, FastifyRequest } from 'fastify';

import { badJsonOf, renderError } from './render-error';

/** A route's own answers to a body that is not JSON, and to JSON refused for a forbidden key (see AnswersBadJson). */
interface BadJsonConfig {
  badJsonAnswers?: BadJsonAnswers;
}

export interface BadJsonAnswers {
  unparsable: object;
  forbiddenKey: object;
}

/**
 * A route that speaks a protocol with its own words for a body it cannot take (JSON-RPC's -32700 Parse error for
 * one that is not JSON, -32600 Invalid Request for one refused for a `__proto__` key) answers those, with 200,
 * instead of the standard 400 body. Fastify parses the body before the route runs, so this filter answers it.
 */
export function AnswersBadJson(answers: BadJsonAnswers): MethodDecorator {
  return RouteConfig({ badJsonAnswers: answers } satisfies BadJsonConfig);
}

/** The global filter: every error a request raises leaves through renderError. */
@Catch()
export class HttpExceptionFilter implements ExceptionFilter {
  catch(exception: unknown, host: ArgumentsHost): void {
    const http = host.switchToHttp();
    const reply = http.getResponse<FastifyReply>();
    const request = http.getRequest<FastifyRequest>();
    const answers = (request.routeOptions?.config as BadJsonConfig | undefined)?.badJsonAnswers;
    const badJson = answers ? badJsonOf(exception) : null;
    if (answers && badJson) {
      void reply.status(200).send(answers[badJson]);
      return;
    }
    const rendered = renderError(exception, request);
    void reply
      .status(rendered.status)
      .headers(rendered.headers ?? {})
      .send(rendered.body);
  }
}
