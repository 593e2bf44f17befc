import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { createTestDatabase } from '../../../test/support/database';
import { call } from '../../../test/support/http';
import { callTool, connectMcp } from '../../../test/support/mcp';
import { mintAccount, ROOT_KEY, uniqueName } from '../../../test/support/principals';
import { RunningApi, startApi } from '../../../test/support/processes';

type Schema = Record<string, any>;

/** The rules a schema states about a value: what the DTO enforces and a tool schema must repeat. */
const RULES = ['type', 'enum', 'default', 'minimum', 'maximum', 'minLength', 'maxLength', 'pattern', 'format', 'minItems', 'maxItems'];

/**
 * A schema reduced to its rules, the same way for both documents: OpenAPI's `$ref` (alone or described) resolved and its
 * `type: [T, "null"]` read as nullable, the tool schema's `anyOf: [T, null]` read the same way.
 */
function rulesOf(schema: Schema, components: Record<string, Schema>): Schema {
  if (schema.$ref) {
    return rulesOf(components[String(schema.$ref).split('/').pop()!], components);
  }
  // A described reference: `{description, allOf: [{$ref}]}`.
  if (schema.allOf?.length === 1) {
    return rulesOf(schema.allOf[0], components);
  }
  const nullBranch = schema.anyOf?.find((branch: Schema) => branch.type === 'null');
  if (nullBranch) {
    return {
      ...rulesOf(
        schema.anyOf.find((branch: Schema) => branch !== nullBranch),
        components,
      ),
      nullable: true,
    };
  }
  const rules: Schema = Object.fromEntries(RULES.filter((rule) => schema[rule] !== undefined).map((rule) => [rule, schema[rule]]));
  if (Array.isArray(rules.type)) {
    rules.type = rules.type.filter((type: string) => type !== 'null')[0];
    rules.nullable = true;
  }
  if (schema.items) {
    rules.items = rulesOf(schema.items, components);
  }
  if (schema.properties) {
    rules.properties = Object.fromEntries(
      Object.entries(schema.properties as Record<string, Schema>).map(([name, property]) => [name, rulesOf(property, components)]),
    );
    rules.required = [...(schema.required ?? [])].sort();
  }
  return rules;
}

/** The tools whose arguments are their route's body DTO, beside the path arguments they add and the DTO fields they leave out. */
const BODY_TOOLS = [
  { tool: 'create_schedule', dto: 'CreateScheduleDto', path: [], omitted: [] },
  { tool: 'update_schedule', dto: 'UpdateScheduleDto', path: ['schedule_id'], omitted: [] },
  { tool: 'requeue_queue_jobs', dto: 'BulkJobsDto', path: [], omitted: [] },
  { tool: 'cancel_queue_jobs', dto: 'BulkJobsDto', path: [], omitted: ['force', 'clear_cancellation'] },
  { tool: 'run_agent', dto: 'StartRunDto', path: ['agent_id'], omitted: ['stream'] },
];

describe('MCP tool schemas state the rules of their route’s DTO', () => {
  let api: RunningApi;
  let client: Client;
  let components: Record<string, Schema>;
  let tools: Map<string, Schema>;

  beforeAll(async () => {
    api = await startApi({ DATABASE_URL: await createTestDatabase(), OS_SECURITY_KEY: ROOT_KEY, MCP_ENABLED: 'true' });
    client = await connectMcp(api.url, ROOT_KEY);
    components = (await call(api.url, 'GET', '/openapi.json')).body.components.schemas;
    tools = new Map((await client.listTools()).tools.map((tool) => [tool.name, tool.inputSchema as Schema]));
  });
  afterAll(async () => {
    await client?.close();
    await api?.stop();
  });

  it.each(BODY_TOOLS)('$tool states every bound, choice and default of $dto', ({ tool, dto, path, omitted }) => {
    const expected = rulesOf(components[dto], components);
    for (const name of omitted) {
      delete expected.properties[name];
    }
    expected.required = expected.required.filter((name: string) => !omitted.includes(name));
    const stated = rulesOf(tools.get(tool)!, components);
    for (const name of path) {
      delete stated.properties[name];
    }
    stated.required = stated.required.filter((name: string) => !path.includes(name));
    expect(stated).toEqual(expected);
  });

  it('describes every argument of every tool: a model calls them from the schema alone', () => {
    const undescribed = [...tools].flatMap(([name, schema]) =>
      Object.entries((schema.properties ?? {}) as Record<string, Schema>)
        .filter(([, property]) => !property.description && !property.$ref)
        .map(([argument]) => `${name}.${argument}`),
    );
    expect(undescribed).toEqual([]);
  });

  it('a schedule field at its stated bound is taken, one past it is refused by the tool as by REST, with the same issue', async () => {
    const schema = tools.get('create_schedule')!.properties as Record<string, Schema>;
    const bounded = Object.entries(schema).filter(([, property]) => property.type === 'integer' && property.maximum !== undefined);
    // timeout_seconds (1 to 86400), max_retries, retry_delay_seconds, catchup_limit: the bounds every schedule client meets.
    expect(bounded.map(([name]) => name).sort()).toEqual(['catchup_limit', 'max_retries', 'retry_delay_seconds', 'timeout_seconds']);
    const base = () => ({ name: uniqueName('bounds'), cron_expr: '0 0 1 1 *', endpoint: '/health' });

    // Positive control: the stated bounds themselves are valid, so the refusals below are about the bound and nothing else.
    for (const end of ['minimum', 'maximum'] as const) {
      const atBounds = Object.fromEntries(bounded.map(([name, property]) => [name, property[end]]));
      const created = await callTool(client, 'create_schedule', { ...base(), ...atBounds });
      expect(created.isError, created.text).toBe(false);
      expect(created.structured).toMatchObject(atBounds);
    }

    for (const [name, property] of bounded) {
      for (const value of [property.minimum - 1, property.maximum + 1]) {
        const rest = await call(api.url, 'POST', '/schedules', { token: ROOT_KEY, json: { ...base(), [name]: value } });
        expect(rest.status, `${name}=${value}`).toBe(422);
        expect(rest.body.detail).toHaveLength(1);
        const [issue] = rest.body.detail;
        expect(issue.loc).toEqual(['body', name]);
        const viaTool = await callTool(client, 'create_schedule', { ...base(), [name]: value });
        expect(viaTool).toMatchObject({ isError: true, text: `422: Invalid arguments: ${name}: ${issue.msg}` });
      }
    }
  });

  it('a PATCH states no default: a client that fills defaults in must not reset what it leaves out', async () => {
    const update = tools.get('update_schedule')!.properties as Record<string, Schema>;
    expect(Object.entries(update).filter(([, property]) => JSON.stringify(property).includes('"default"'))).toEqual([]);
    // Create keeps them: they say what an absent field becomes there.
    const create = tools.get('create_schedule')!.properties as Record<string, Schema>;
    expect(create.timezone.default).toBe('UTC');
    expect(components.UpdateScheduleDto.properties.timezone.default).toBeUndefined();
    expect(components.CreateScheduleDto.properties.timezone.default).toBe('UTC');

    // As the schema says: a name-only update keeps every other field.
    const created = await callTool(client, 'create_schedule', {
      name: uniqueName('patch'),
      cron_expr: '0 0 1 1 *',
      endpoint: '/config',
      method: 'GET',
      timezone: 'Europe/Berlin',
      timeout_seconds: 60,
      max_retries: 2,
    });
    expect(created.isError, created.text).toBe(false);
    const renamed = await callTool(client, 'update_schedule', { schedule_id: created.structured.id, name: uniqueName('renamed') });
    expect(renamed.structured).toMatchObject({ method: 'GET', timezone: 'Europe/Berlin', timeout_seconds: 60, max_retries: 2 });
  });

  it('a list tool states its route’s page bounds, and refuses past them as REST does', async () => {
    const rest = (await call(api.url, 'GET', '/openapi.json')).body.paths;
    for (const [tool, path] of [
      ['list_sessions', '/sessions'],
      ['list_queue_jobs', '/queue/jobs'],
      ['list_schedules', '/schedules'],
    ]) {
      const documented = rest[path].get.parameters.find((parameter: Schema) => parameter.name === 'limit').schema;
      expect(rulesOf(tools.get(tool)!.properties.limit, components), tool).toEqual({
        type: 'integer',
        minimum: 1,
        maximum: documented.maximum,
        default: documented.default,
      });
    }
    const restIssue = (await call(api.url, 'GET', '/sessions?limit=0', { token: ROOT_KEY })).body.detail[0];
    expect(await callTool(client, 'list_sessions', { limit: 0 })).toMatchObject({
      isError: true,
      text: `422: Invalid arguments: limit: ${restIssue.msg}`,
    });
  });

  it('an argument of the wrong type is refused as every bad argument is, a 422 naming it; an unknown tool is a protocol error', async () => {
    // Below the tool: the schema a model reads says integer, so a string is refused before any handler runs.
    const refused = await callTool(client, 'list_sessions', { limit: 'ten' });
    expect(refused).toMatchObject({ isError: true, text: expect.stringMatching(/^422: Invalid arguments: limit: \S/) });
    const nested = await callTool(client, 'create_schedule', {
      name: uniqueName('types'),
      cron_expr: '0 0 1 1 *',
      endpoint: '/health',
      timeout_seconds: '60',
      max_retries: true,
    });
    expect(nested.isError).toBe(true);
    expect(nested.text).toMatch(/^422: Invalid arguments: (timeout_seconds|max_retries): .+; (timeout_seconds|max_retries): /);
    // A caller without the route's scope learns nothing about its arguments, as on REST, where the guard answers first.
    const narrow = await mintAccount(api.url, ROOT_KEY, { scopes: ['agents:read'] });
    const outsider = await connectMcp(api.url, narrow.token);
    try {
      expect(await callTool(outsider, 'list_sessions', { limit: 'ten' })).toMatchObject({
        isError: true,
        text: expect.stringMatching(/^403: /),
      });
    } finally {
      await outsider.close();
    }
    await expect(client.callTool({ name: 'no_such_tool', arguments: {} })).rejects.toMatchObject({
      code: -32602,
      message: expect.stringContaining('no_such_tool'),
    });
  });
});
