import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';

import openapiTS, { astToString, COMMENT_HEADER, type OpenAPI3 } from 'openapi-typescript';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { createTestDatabase } from './support/database';
import { ROOT_KEY } from './support/principals';
import { RunningApi, startApi } from './support/processes';

const CONTRACT = 'openapi.json';
/** The svc CLI's client types, generated from the contract (libs/svc-client calls the api through them). */
const CLIENT_TYPES = 'libs/svc-client/src/generated/openapi.d.ts';
/** `npm run openapi` sets this to write the served document and its client types instead of comparing. */
const UPDATE = process.env.UPDATE_OPENAPI === '1';

/**
 * openapi-typescript's output for a document. A field with a default stays optional, as the request
 * DTOs declare it (`--default-non-nullable=false`): the CLI may leave it out and get the server's default.
 */
async function clientTypes(document: string): Promise<string> {
  return `${COMMENT_HEADER}${astToString(await openapiTS(JSON.parse(document) as OpenAPI3, { defaultNonNullable: false }))}`;
}

/**
 * One contract: openapi.json in the repository is the api's OpenAPI document, as served with MCP on and
 * PUBLIC_URL at the quickstart's address. A change to a route, DTO or scope that changes the document
 * fails here until openapi.json is regenerated, so the diff is reviewed like code.
 */
describe('the committed OpenAPI contract', () => {
  let api: RunningApi;
  let served: string;
  let servedTypes: string;

  beforeAll(async () => {
    api = await startApi({
      DATABASE_URL: await createTestDatabase(),
      OS_SECURITY_KEY: ROOT_KEY,
      MCP_ENABLED: 'true',
      PUBLIC_URL: 'http://127.0.0.1:7777',
    });
    served = `${JSON.stringify(await (await fetch(`${api.url}/openapi.json`)).json(), null, 2)}\n`;
    servedTypes = await clientTypes(served);
    if (UPDATE) {
      writeFileSync(CONTRACT, served);
      writeFileSync(CLIENT_TYPES, servedTypes);
    }
  });
  afterAll(() => api?.stop());

  it('openapi.json is the document the api serves', () => {
    expect(
      served === readFileSync(CONTRACT, 'utf8'),
      'The served OpenAPI document differs from openapi.json: run `npm run openapi`, then review and commit the diff',
    ).toBe(true);
  });

  it('the CLI client types are generated from that document', () => {
    expect(
      servedTypes === readFileSync(CLIENT_TYPES, 'utf8'),
      `${CLIENT_TYPES} is stale: run \`npm run openapi\`, then review and commit the diff`,
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
