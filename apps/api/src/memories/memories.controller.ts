import { Body, Controller, Delete, Get, HttpCode, HttpStatus, Param, Patch, Post, Query } from '@nestjs/common';
import {
  ApiBody,
  ApiCreatedResponse,
  ApiNoContentResponse,
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
  CreateMemoryDto,
  ListMemoriesQuery,
  ListMemoryTopicsQuery,
  MemoriesService,
  MemoryDto,
  MemoryIdParams,
  MemoryPageDto,
  UpdateMemoryDto,
} from '@app/memories';

@ApiTags('memories')
@ApiUnprocessableEntityResponse({ type: ValidationErrorBodyDto, description: 'Validation error' })
@Controller()
export class MemoriesController {
  constructor(private readonly memories: MemoriesService) {}

  @Get('memories')
  @RequireScope('memories:read')
  @ApiOperation({ summary: "The caller's memories (self-scoped), filtered by user, component, topic or text" })
  @ApiOkResponse({ type: MemoryPageDto })
  list(@CurrentPrincipal() caller: Principal, @Query() query: ListMemoriesQuery): Promise<MemoryPageDto> {
    return this.memories.list(caller, query);
  }

  @Post('memories')
  @RequireScope('memories:write')
  @ApiOperation({ summary: 'Keep a memory; a token’s memories belong to sa:<name>' })
  @ApiCreatedResponse({ type: MemoryDto })
  @ApiBody({
    type: CreateMemoryDto,
    examples: { fact: { summary: 'A fact with a topic', value: { memory: 'Prefers answers in French', topics: ['language'] } } },
  })
  create(@CurrentPrincipal() caller: Principal, @Body() request: CreateMemoryDto): Promise<MemoryDto> {
    return this.memories.create(caller, request);
  }

  @Get('memories/:memory_id')
  @RequireScope('memories:read')
  @ApiOperation({ summary: 'One memory' })
  @ApiOkResponse({ type: MemoryDto })
  @ApiNotFoundResponse({ type: ErrorBodyDto })
  get(@CurrentPrincipal() caller: Principal, @Param() params: MemoryIdParams): Promise<MemoryDto> {
    return this.memories.get(caller, params.memory_id);
  }

  @Patch('memories/:memory_id')
  @RequireScope('memories:write')
  @ApiOperation({ summary: 'Change a memory’s text or topics; absent fields are untouched' })
  @ApiOkResponse({ type: MemoryDto })
  @ApiNotFoundResponse({ type: ErrorBodyDto })
  @ApiBody({
    type: UpdateMemoryDto,
    // Topics only: sent as it is, the example leaves the fact itself untouched.
    examples: { topics: { summary: 'New topics, the fact kept', value: { topics: ['language', 'preferences'] } } },
  })
  update(@CurrentPrincipal() caller: Principal, @Param() params: MemoryIdParams, @Body() request: UpdateMemoryDto): Promise<MemoryDto> {
    return this.memories.update(caller, params.memory_id, request);
  }

  @Delete('memories/:memory_id')
  @HttpCode(HttpStatus.NO_CONTENT)
  @RequireScope('memories:delete')
  @ApiOperation({ summary: 'Delete a memory' })
  @ApiNoContentResponse()
  @ApiNotFoundResponse({ type: ErrorBodyDto })
  remove(@CurrentPrincipal() caller: Principal, @Param() params: MemoryIdParams): Promise<void> {
    return this.memories.remove(caller, params.memory_id);
  }

  @Get('memory_topics')
  @RequireScope('memories:read')
  @ApiOperation({ summary: 'The distinct topics of the memories the caller sees, alphabetically' })
  @ApiOkResponse({ type: [String] })
  topics(@CurrentPrincipal() caller: Principal, @Query() query: ListMemoryTopicsQuery): Promise<string[]> {
    return this.memories.topics(caller, query);
  }
}
