import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { createTestDatabase } from '../../../test/support/database';
import { ApiResponse, call } from '../../../test/support/http';
import { schemaCompiler, undocumented } from '../../../test/support/openapi-schemas';
import { ROOT_KEY } from '../../../test/support/principals';
import { RunningApi, startApi } from '../../../test/support/processes';

/**
 * What /docs promises is what the api answers: every JSON answer to a real request (each GET operation with
 * real ids, and the writes that made them) matches the schema its operation documents for that status, so a
 * client generated from /openapi.json reads every field as it is.
 */
describe('answers match the OpenAPI document', () => {
  let api: RunningApi;
  let document: any;
  let compile: ReturnType<typeof schemaCompiler>;

  beforeAll(async () => {
    api = await startApi({ DATABASE_URL: await createTestDatabase(), OS_SECURITY_KEY: ROOT_KEY, DEMO_COMPONENTS: 'true' });
    document = (await call(api.url, 'GET', '/openapi.json')).body;
    compile = schemaCompiler(document);
  });
  afterAll(() => api?.stop());

  /** Why this answer to `METHOD path-template` is not as documented, or null. */
  function problem(method: string, template: string, answer: ApiResponse): string | null {
    const documented = document.paths[template]?.[method.toLowerCase()]?.responses?.[String(answer.status)];
    if (!documented) {
      return `${method} ${template}: status ${answer.status} is not documented`;
    }
    const mediaType = (answer.headers.get('content-type') ?? '').split(';')[0].trim();
    const schema = documented.content?.[mediaType]?.schema;
    if (!schema) {
      return answer.text === '' ? null : `${method} ${template}: a ${answer.status} ${mediaType} body where none is documented`;
    }
    const issue = undocumented(compile(schema), answer.body);
    return issue && `${method} ${template} ${answer.status}: ${issue}`;
  }

  it('for each GET operation with real ids, and for the writes that made them', async () => {
    const problems: string[] = [];
    const write = async (method: string, template: string, path: string, json: Record<string, unknown>) => {
      const answer = await call(api.url, method, path, { token: ROOT_KEY, json });
      expect(answer.status, answer.text).toBeLessThan(300);
      problems.push(problem(method, template, answer) ?? '');
      return answer.body;
    };
    const run = await write('POST', '/agents/{agent_id}/runs', '/agents/echo-agent/runs', { message: 'hi' });
    const queued = await write('POST', '/agents/{agent_id}/runs', '/agents/echo-agent/runs', { message: 'later', background: true });
    const schedule = await write('POST', '/schedules', '/schedules', { name: 'documented', cron_expr: '0 0 1 1 *', endpoint: '/health' });
    const account = await write('POST', '/service-accounts', '/service-accounts', { name: 'documented' });
    const memory = await write('POST', '/memories', '/memories', { memory: 'likes tea', topics: ['drinks'] });
    const traces = await call(api.url, 'GET', '/traces', { token: ROOT_KEY });
    const ids: Record<string, string> = {
      agent_id: 'echo-agent',
      team_id: 'echo-team',
      workflow_id: 'echo-workflow',
      run_id: run.run_id,
      job_id: queued.run_id,
      session_id: run.session_id,
      schedule_id: schedule.id,
      id: account.id,
      memory_id: memory.memory_id,
      trace_id: traces.body.data[0].trace_id,
    };

    const checked: string[] = [];
    for (const [template, operations] of Object.entries(document.paths as Record<string, Record<string, unknown>>)) {
      if (!operations.get || template === '/ws') {
        continue; // /ws answers an upgrade
      }
      const path = template.replace(/\{([a-z_]+)\}/g, (_, name: string) => ids[name] ?? name);
      const answer = await call(api.url, 'GET', path, { token: ROOT_KEY });
      if (!(answer.headers.get('content-type') ?? '').includes('json')) {
        continue; // /metrics (Prometheus text)
      }
      checked.push(`${answer.status} ${template}`);
      problems.push(problem('GET', template, answer) ?? '');
    }
    expect(problems.filter(Boolean)).toEqual([]);
    // Every resource read with a real id, not only lists and 404s.
    expect(checked).toEqual(
      expect.arrayContaining([
        '200 /agents/{agent_id}/runs/{run_id}',
        '200 /sessions/{session_id}/runs',
        '200 /queue/jobs/{job_id}',
        '200 /schedules/{schedule_id}/runs',
        '200 /memories/{memory_id}',
        '200 /traces/{trace_id}',
        '200 /config',
      ]),
    );
  });
});
