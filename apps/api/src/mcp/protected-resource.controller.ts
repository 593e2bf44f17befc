import { Controller, Get, Header } from '@nestjs/common';
import { ApiNotFoundResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';

import { Public } from '@app/auth';
import { Env } from '@app/config';
import { ErrorBodyDto, RequestErrorCode, RequestException } from '@app/errors';
import { PROTECTED_RESOURCE_PATHS, ProtectedResourceMetadata, protectedResourceMetadata } from '@app/mcp';

const NOT_PROTECTED = '/mcp is not an OAuth-protected resource on this service (MCP_OAUTH_ISSUER is unset)';

/** RFC 9728 metadata of /mcp: where an MCP client signs in. Exists only in OAuth-protected resource mode. */
@ApiTags('mcp')
@Controller()
export class ProtectedResourceController {
  constructor(private readonly env: Env) {}

  @Get(PROTECTED_RESOURCE_PATHS)
  @Public()
  // Browser-based MCP clients read it cross-origin; it holds nothing secret.
  @Header('access-control-allow-origin', '*')
  @ApiOperation({ summary: 'OAuth protected-resource metadata of /mcp: {resource, authorization_servers}' })
  @ApiOkResponse({
    description: 'RFC 9728 metadata',
    schema: {
      type: 'object',
      required: ['resource', 'authorization_servers'],
      properties: {
        resource: { type: 'string', format: 'uri', description: 'The URL of /mcp' },
        authorization_servers: { type: 'array', items: { type: 'string', format: 'uri' }, description: 'Where an MCP client signs in' },
      },
    },
  })
  // The description is the answer's detail: /docs shows it as the example.
  @ApiNotFoundResponse({ type: ErrorBodyDto, description: NOT_PROTECTED })
  metadata(): ProtectedResourceMetadata {
    const metadata = protectedResourceMetadata(this.env);
    if (!metadata) {
      throw new RequestException(RequestErrorCode.NotFound, NOT_PROTECTED);
    }
    return metadata;
  }
}
