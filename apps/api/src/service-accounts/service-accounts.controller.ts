import { Body, Controller, Delete, Get, HttpCode, HttpStatus, Param, Post, Query } from '@nestjs/common';
import {
  ApiBadRequestResponse,
  ApiBody,
  ApiConflictResponse,
  ApiCreatedResponse,
  ApiForbiddenResponse,
  ApiNotFoundResponse,
  ApiOkResponse,
  ApiOperation,
  ApiTags,
  ApiUnprocessableEntityResponse,
} from '@nestjs/swagger';

import { Principal } from '@app/access';
import { CurrentPrincipal, RequireScope } from '@app/auth';
import { ErrorBodyDto, ValidationErrorBodyDto } from '@app/errors';
import {
  CreatedServiceAccountDto,
  CreateServiceAccountDto,
  ListServiceAccountsQuery,
  RotateServiceAccountDto,
  ServiceAccountDto,
  ServiceAccountIdParams,
  ServiceAccountPageDto,
  ServiceAccountsService,
} from '@app/service-accounts';

@ApiTags('service-accounts')
@ApiUnprocessableEntityResponse({ type: ValidationErrorBodyDto, description: 'Validation error' })
@Controller('service-accounts')
export class ServiceAccountsController {
  constructor(private readonly serviceAccounts: ServiceAccountsService) {}

  @Post()
  // Applied after @RequireScope's (decorators apply bottom up): Swagger shows it after the scope's 403.
  @ApiForbiddenResponse({
    type: ErrorBodyDto,
    description: 'Or the request grants scopes the caller does not hold itself ("Cannot grant scope(s) you do not hold: ...")',
  })
  @RequireScope('service_accounts:write', { handsOutCredential: 'Minting a service account' })
  @ApiOperation({ summary: 'Mint a service account; the plaintext token is in this response only' })
  @ApiCreatedResponse({ type: CreatedServiceAccountDto })
  @ApiBadRequestResponse({ type: ErrorBodyDto, description: 'Invalid scopes, or privileged scopes without allow_privileged_scopes' })
  @ApiConflictResponse({ type: ErrorBodyDto, description: 'An active account with that name exists' })
  mint(@CurrentPrincipal() caller: Principal, @Body() request: CreateServiceAccountDto): Promise<CreatedServiceAccountDto> {
    return this.serviceAccounts.mint(caller, request);
  }

  @Get()
  @RequireScope('service_accounts:read')
  @ApiOperation({
    summary: 'List service accounts (metadata and token_prefix only)',
    description:
      'Self-scoped: a service-account token sees only the accounts it minted, and a JWT user only theirs when users are isolated from each other; the security key and `platform:admin` see every account.',
  })
  @ApiOkResponse({ type: ServiceAccountPageDto })
  list(@CurrentPrincipal() caller: Principal, @Query() query: ListServiceAccountsQuery): Promise<ServiceAccountPageDto> {
    return this.serviceAccounts.list(caller, query);
  }

  @Delete(':id')
  @HttpCode(HttpStatus.OK)
  @RequireScope('service_accounts:write')
  @ApiOperation({
    summary: 'Revoke a service account (idempotent, one-way); only its minter or an admin may',
    description: 'The accounts minted with its token are revoked with it, and theirs, on down: they acted on its authority.',
  })
  @ApiOkResponse({ type: ServiceAccountDto, description: 'The account, with revoked_at set' })
  @ApiNotFoundResponse({ type: ErrorBodyDto })
  revoke(@CurrentPrincipal() caller: Principal, @Param() params: ServiceAccountIdParams): Promise<ServiceAccountDto> {
    return this.serviceAccounts.revoke(caller, params.id);
  }

  @Post(':id/rotate')
  @HttpCode(HttpStatus.OK)
  @RequireScope('service_accounts:write', { handsOutCredential: 'Rotating a service account token' })
  @ApiOperation({
    summary:
      'Rotate the token: a new plaintext token in this response only; the old one keeps working for grace_seconds, then 401. Only its minter or an admin may',
  })
  @ApiOkResponse({ type: CreatedServiceAccountDto, description: 'The account with its new token and token_prefix' })
  @ApiNotFoundResponse({ type: ErrorBodyDto, description: 'No account with that id is visible to the caller' })
  @ApiConflictResponse({ type: ErrorBodyDto, description: 'The account is revoked or expired' })
  @ApiBody({ type: RotateServiceAccountDto, required: false, description: 'May be omitted: an hour of grace' })
  rotate(
    @CurrentPrincipal() caller: Principal,
    @Param() params: ServiceAccountIdParams,
    @Body() request: RotateServiceAccountDto,
  ): Promise<CreatedServiceAccountDto> {
    return this.serviceAccounts.rotate(caller, params.id, request);
  }
}
