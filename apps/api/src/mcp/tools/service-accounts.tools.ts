import { Injectable } from '@nestjs/common';
import { z } from 'zod';

import { Principal } from '@app/access';
import { McpTool, McpToolset } from '@app/mcp';
import {
  ListServiceAccountsQuery,
  ServiceAccountDto,
  ServiceAccountIdParams,
  ServiceAccountPageDto,
  ServiceAccountsService,
} from '@app/service-accounts';

import { McpArguments, pageArguments } from '../mcp-arguments';

/**
 * Listing and revoking only: minting is left to REST and `svc tokens`, because a tool result would
 * put the plaintext token into a model's context and transcript.
 */
@McpToolset()
@Injectable()
export class ServiceAccountTools {
  constructor(
    private readonly accounts: ServiceAccountsService,
    private readonly args: McpArguments,
  ) {}

  @McpTool({
    name: 'list_service_accounts',
    mirrors: 'GET /service-accounts',
    description: 'List service accounts (metadata and token prefix only, never tokens).',
    input: z.object({
      ...pageArguments(ListServiceAccountsQuery),
      include_revoked: z.boolean().optional().describe('Include revoked accounts (default true)'),
    }),
    annotations: { readOnlyHint: true },
  })
  async list(principal: Principal, args: Record<string, unknown>): Promise<ServiceAccountPageDto> {
    return this.accounts.list(principal, await this.args.as(ListServiceAccountsQuery, args));
  }

  @McpTool({
    name: 'revoke_service_account',
    mirrors: 'DELETE /service-accounts/:id',
    description:
      'Revoke a service account by id (only its minter or an admin may), with every account minted with its token, on down. One-way: the tokens stop working at once; the name becomes reusable.',
    input: z.object({ id: z.string().describe('Service account id (UUID)') }),
    annotations: { destructiveHint: true, idempotentHint: true },
  })
  async revoke(principal: Principal, args: Record<string, unknown>): Promise<ServiceAccountDto> {
    const { id } = await this.args.as(ServiceAccountIdParams, args, 'param');
    return this.accounts.revoke(principal, id);
  }
}
