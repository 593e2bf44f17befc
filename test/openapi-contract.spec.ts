import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { createTestDatabase } from './support/database';
import { ROOT_KEY } from './support/principals';
import { RunningApi, startApi } from './support/processes';

const CONTRACT = 'openapi.json';
/** `npm run openapi` sets this to write the served document into openapi.json instead of comparing. */
const UPDATE = process.env.UPDATE_OPENAPI === '1';

/**
 * One contract: openapi.json in the repository is the api's OpenAPI document, as served with MCP on and
 * PUBLIC_URL at the quickstart's address. A change to a route, DTO or scope that changes the document
 * fails here until openapi.json is regenerated, so the diff is reviewed like code.
 */
describe('the committed OpenAPI contract', () => {
  let api: RunningApi;
  let served: string;

  beforeAll(async () => {
    api = await startApi({
      DATABASE_URL: await createTestDatabase(),
      OS_SECURITY_KEY: ROOT_KEY,
      MCP_ENABLED: 'true',
      PUBLIC_URL: 'http://127.0.0.1:7777',
    });
    served = `${JSON.stringify(await (await fetch(`${api.url}/openapi.json`)).json(), null, 2)}\n`;
    if (UPDATE) {
      writeFileSync(CONTRACT, served);
    }
  });
  afterAll(() => api?.stop());

  it('openapi.json is the document the api serves', () => {
    expect(
      served === readFileSync(CONTRACT, 'utf8'),
      'The served OpenAPI document differs from openapi.json: run `npm run openapi`, then review and commit the diff',
    ).toBe(true);
  });

  it('passes Redocly’s recommended rules with no error', () => {
    const run = () =>
      execFileSync('node_modules/.bin/redocly', ['lint', CONTRACT, '--extends', 'recommended', '--format', 'summary'], {
        encoding: 'utf8',
        stdio: 'pipe',
      });
    expect(run).not.toThrow();
  });
});
