import { Controller, Delete, Get, HttpCode, Post, Req, Res } from '@nestjs/common';
import {
  ApiAcceptedResponse,
  ApiBadRequestResponse,
  ApiBearerAuth,
  ApiBody,
  ApiExcludeEndpoint,
  ApiExtension,
  ApiForbiddenResponse,
  ApiNotAcceptableResponse,
  ApiOkResponse,
  ApiOperation,
  ApiTags,
  ApiUnauthorizedResponse,
  ApiUnsupportedMediaTypeResponse,
} from '@nestjs/swagger';
import { FastifyReply, FastifyRequest } from 'fastify';

import { AuthenticatedRequest, Authenticator, credentialsOf, Public, Unschedulable } from '@app/auth';
import { Env, isAllowedOrigin } from '@app/config';
import { ErrorBodyDto, RequestErrorCode, RequestException } from '@app/errors';
import { McpEndpoint } from '@app/mcp';

/** A JSON-RPC id: a string, a number, or null. */
const JSON_RPC_ID = { oneOf: [{ type: 'string' }, { type: 'integer' }, { type: 'null' }] };

/** How the MCP transport refuses a request it cannot serve: a JSON-RPC error object. */
const JSON_RPC_ERROR = {
  type: 'object',
  properties: {
    jsonrpc: { type: 'string', enum: ['2.0'] },
    error: { type: 'object', properties: { code: { type: 'integer' }, message: { type: 'string' } } },
    id: JSON_RPC_ID,
  },
};

/**
 * MCP over Streamable HTTP, stateless. The route is @Public for the guard because /mcp identifies
 * its caller itself (REST credentials, plus OAuth tokens when configured) and then checks every tool
 * call against the scope of the REST route that tool mirrors.
 */
@ApiTags('mcp')
@Controller('mcp')
// A fire is no MCP client (the transport wants one that takes an event stream), and a refused tool answers 200.
@Unschedulable(
  "A schedule cannot call /mcp: schedule the REST route the MCP tool mirrors instead (its 'platform/rest-route' in tools/list)",
)
export class McpController {
  constructor(
    private readonly env: Env,
    private readonly authenticator: Authenticator,
    private readonly endpoint: McpEndpoint,
  ) {}

  @Post()
  @Public()
  @HttpCode(200)
  @ApiOperation({
    summary: 'MCP JSON-RPC (initialize, tools/list, tools/call); tool calls need the scope of the REST route they mirror',
    description:
      'MCP Streamable HTTP, stateless. A request must accept both `application/json` and `text/event-stream` (406 otherwise) and send ' +
      'JSON (415 otherwise), which "Try it out" cannot do: use an MCP client (`svc connect` sets them up), or curl with ' +
      '`-H "Accept: application/json, text/event-stream"`.',
  })
  @ApiBody({
    description: 'A JSON-RPC 2.0 request or notification of the MCP protocol',
    schema: {
      type: 'object',
      required: ['jsonrpc', 'method'],
      properties: {
        jsonrpc: { type: 'string', enum: ['2.0'] },
        id: JSON_RPC_ID,
        method: { type: 'string' },
        params: { type: 'object' },
      },
    },
    examples: { 'tools/list': { value: { jsonrpc: '2.0', id: 1, method: 'tools/list' } } },
  })
  @ApiBearerAuth('bearer')
  @ApiExtension('x-required-scope', 'per tool: the scope of the REST route it mirrors')
  @ApiOkResponse({
    description: 'The JSON-RPC response, as application/json or a text/event-stream; a refused tool call is a result with isError',
  })
  @ApiAcceptedResponse({ description: 'A notification or response from the client, accepted (no body)' })
  @ApiUnauthorizedResponse({
    description: 'Missing or invalid credential (with a WWW-Authenticate challenge when /mcp is OAuth-protected)',
    type: ErrorBodyDto,
  })
  @ApiForbiddenResponse({ description: 'Origin not allowed', type: ErrorBodyDto })
  @ApiNotAcceptableResponse({
    description: 'The request does not accept both application/json and text/event-stream',
    schema: JSON_RPC_ERROR,
  })
  @ApiBadRequestResponse({
    description: 'A body that is not JSON (the error body every route answers), or JSON that is not a JSON-RPC message (a JSON-RPC error)',
    content: {
      'application/json': {
        schema: { oneOf: [{ $ref: '#/components/schemas/ErrorBodyDto' }, JSON_RPC_ERROR] },
        example: {
          jsonrpc: '2.0',
          id: null,
          error: { code: -32600, message: 'Invalid Request: not a JSON-RPC 2.0 request, notification or response' },
        },
      },
    },
  })
  @ApiUnsupportedMediaTypeResponse({ description: 'The body is not sent as application/json', type: ErrorBodyDto })
  async post(@Req() request: FastifyRequest, @Res() reply: FastifyReply): Promise<void> {
    if (!isAllowedOrigin(request.headers.origin, this.env.publicUrl)) {
      throw new RequestException(RequestErrorCode.Forbidden, 'Origin not allowed');
    }
    const principal = await this.authenticator.identifyForMcp(credentialsOf(request));
    // For the access line, as the scope guard records it on the other routes.
    (request as AuthenticatedRequest).principal = principal;
    reply.raw.setHeader('x-request-id', request.id);
    // The SDK transport writes the response itself (JSON or an SSE stream).
    reply.hijack();
    await this.endpoint.handle(principal, request.raw, reply.raw, request.body);
  }

  /**
   * Stateless: no server-initiated stream to GET and no session to DELETE (the Streamable HTTP transport's 405).
   * One route decorator per method: stacked on one handler, the last applied replaces the others.
   */
  @Get()
  @Public()
  @ApiExcludeEndpoint()
  getNotAllowed(@Res() reply: FastifyReply): void {
    methodNotAllowed(reply);
  }

  @Delete()
  @Public()
  @ApiExcludeEndpoint()
  deleteNotAllowed(@Res() reply: FastifyReply): void {
    methodNotAllowed(reply);
  }
}

function methodNotAllowed(reply: FastifyReply): void {
  void reply.status(405).header('allow', 'POST').send({ detail: 'This MCP endpoint is stateless: POST JSON-RPC messages to it' });
}
