import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { createTestDatabase } from '../../../test/support/database';
import { expectErrorBody, expectValidationBody } from '../../../test/support/error-bodies';
import { call } from '../../../test/support/http';
import { ROOT_KEY, uniqueName } from '../../../test/support/principals';
import { RunningApi, startApi } from '../../../test/support/processes';

describe('malformed input on every service-account route', () => {
  let api: RunningApi;
  beforeAll(async () => {
    api = await startApi({ DATABASE_URL: await createTestDatabase(), OS_SECURITY_KEY: ROOT_KEY });
  });
  afterAll(() => api?.stop());

  const post = (raw: { body: string; contentType: string }) => call(api.url, 'POST', '/service-accounts', { token: ROOT_KEY, raw });
  const postJson = (json: unknown) => call(api.url, 'POST', '/service-accounts', { token: ROOT_KEY, json });

  describe('POST /service-accounts', () => {
    it('answers 400 to malformed JSON', async () => {
      expectErrorBody(await post({ body: '{"name": ', contentType: 'application/json' }), 400);
    });

    it('answers 415 to a content type it does not read', async () => {
      expectErrorBody(await post({ body: 'name=x', contentType: 'text/plain' }), 415);
    });

    it('answers 413 to an oversized body', async () => {
      const huge = JSON.stringify({ name: 'x', description: 'y'.repeat(1_100_000) });
      expectErrorBody(await post({ body: huge, contentType: 'application/json' }), 413);
    });

    it('answers 422 to a body that is not an object', async () => {
      for (const body of [[], 'name', 42, null]) {
        expect(expectValidationBody(await postJson(body))).toEqual([['body']]);
      }
    });

    it('answers 422 naming every field of the wrong type', async () => {
      const locs = expectValidationBody(
        await postJson({ name: 123, scopes: 'agents:run', expires_in_days: 'ten', never_expires: 'yes', allow_privileged_scopes: 1 }),
      );
      expect(locs).toEqual(
        expect.arrayContaining([
          ['body', 'name'],
          ['body', 'scopes'],
          ['body', 'expires_in_days'],
          ['body', 'never_expires'],
          ['body', 'allow_privileged_scopes'],
        ]),
      );
    });

    it('answers 422 to scope grants that are neither strings nor objects, or not `allow`', async () => {
      const notAList = await postJson({ name: uniqueName(), scopes: 'agents:run' });
      expect(expectValidationBody(notAList)).toEqual([['body', 'scopes']]);
      expect(notAList.body.detail[0]).toMatchObject({
        type: 'isArray',
        msg: 'scopes must be an array of scope strings or {scope, effect} objects',
      });
      const number = await postJson({ name: uniqueName(), scopes: [42] });
      expect(expectValidationBody(number)).toEqual([['body', 'scopes', 0]]);
      expect(number.body.detail[0].msg).toBe('each scope must be a scope string or a {scope, effect} object');
      // An array is an object to `typeof`, not a grant: nested lists are refused, never read as grants.
      for (const scopes of [[[]], [['agents:run']], ['agents:run', []]]) {
        const nested = await postJson({ name: uniqueName(), scopes });
        expect(expectValidationBody(nested), JSON.stringify(scopes)).toEqual([['body', 'scopes', scopes.length - 1]]);
        expect(nested.body.detail[0].msg).toBe('each scope must be a scope string or a {scope, effect} object');
      }
      expect(expectValidationBody(await postJson({ name: uniqueName(), scopes: [{ scope: 'agents:run', effect: 'deny' }] }))).toEqual([
        ['body', 'scopes', 0, 'effect'],
      ]);
    });

    it('answers 422 to out-of-range numbers', async () => {
      for (const days of [0, 3651, -5, 1.5]) {
        const response = await postJson({ name: uniqueName(), expires_in_days: days });
        expect(expectValidationBody(response), String(days)).toContainEqual(['body', 'expires_in_days']);
        expect(response.body.detail[0].input).toBe(days);
      }
    });

    it('answers 422 to oversized or malformed names', async () => {
      for (const name of ['a'.repeat(64), 'Upper', '-leading', 'sa:colon', 'has space', '']) {
        expect(expectValidationBody(await postJson({ name })), name).toEqual([['body', 'name']]);
      }
    });

    // The spec's 400 for invalid scope strings holds for one too long to be a scope; the error names it cut short.
    it('answers 400 to an oversized scope string, naming it cut short', async () => {
      const response = await postJson({ name: uniqueName(), scopes: [{ scope: `agents:${'a'.repeat(300)}:run` }] });
      expectErrorBody(response, 400);
      expect(response.body.detail).toBe(`Invalid scope(s): agents:${'a'.repeat(73)}…`);
    });

    it('refuses a field it does not take, minting nothing (a misspelt `scopes` would mint the default ones)', async () => {
      const name = uniqueName('typo');
      const response = await postJson({ name, scope: ['config:read'] });
      expect(expectValidationBody(response)).toEqual([['body', 'scope']]);
      expect(response.body.detail[0]).toMatchObject({ type: 'extra_forbidden', input: ['config:read'] });
      const listed = await call(api.url, 'GET', '/service-accounts?limit=100', { token: ROOT_KEY });
      expect(listed.body.data.map((account: { name: string }) => account.name)).not.toContain(name);
      // Nested objects too: a grant takes `scope` and `effect` only.
      expect(expectValidationBody(await postJson({ name, scopes: [{ scope: 'config:read', efect: 'allow' }] }))).toEqual([
        ['body', 'scopes', 0, 'efect'],
      ]);
    });

    it('names a missing required field with type "missing"', async () => {
      const response = await postJson({});
      expect(expectValidationBody(response)).toEqual([['body', 'name']]);
      expect(response.body.detail[0]).toMatchObject({ type: 'missing', msg: 'Field required' });
    });
  });

  describe('GET /service-accounts', () => {
    it.each([
      ['limit=0', 'limit'],
      ['limit=101', 'limit'],
      ['limit=abc', 'limit'],
      ['limit=1.5', 'limit'],
      ['page=0', 'page'],
      ['page=-1', 'page'],
      ['include_revoked=maybe', 'include_revoked'],
      ['sort_order=sideways', 'sort_order'],
    ])('answers 422 to %s', async (queryString, field) => {
      const response = await call(api.url, 'GET', `/service-accounts?${queryString}`, { token: ROOT_KEY });
      expect(expectValidationBody(response)).toEqual([['query', field]]);
      // One entry per field: what is wrong first (not a number), not every bound a number would also have to meet.
      expect(response.body.detail).toHaveLength(1);
    });
  });

  describe('DELETE /service-accounts/{id}', () => {
    it('answers 414 with the standard body to a path id past any sane length', async () => {
      expectErrorBody(await call(api.url, 'DELETE', `/service-accounts/${'x'.repeat(1025)}`, { token: ROOT_KEY }), 414);
    });

    // The spec: an id that does not exist is a 404, and an id that cannot name anything does not exist.
    it.each(['not-a-uuid', '123', 'x'.repeat(90), 'x'.repeat(500), '%00', "1'%20OR%20'1'='1", '00000000-0000-4000-8000-000000000000%00'])(
      'answers 404 to the path id %s',
      async (id) => {
        expectErrorBody(await call(api.url, 'DELETE', `/service-accounts/${id}`, { token: ROOT_KEY }), 404);
        expectErrorBody(await call(api.url, 'POST', `/service-accounts/${id}/rotate`, { token: ROOT_KEY }), 404);
      },
    );
  });
});
