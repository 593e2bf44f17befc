import { expect } from 'vitest';

import { ApiResponse } from './http';

/** The spec's standard error body: `detail` plus optional `error_id` / `error_type`, nothing else. */
export function expectErrorBody(response: ApiResponse, status: number): void {
  expect(response.status, response.text).toBe(status);
  expect(typeof response.body.detail, response.text).toBe('string');
  expect(
    Object.keys(response.body).every((key) => ['detail', 'error_id', 'error_type'].includes(key)),
    response.text,
  ).toBe(true);
  expect(response.text).not.toMatch(/\bat .+\.(js|ts):\d+/);
}

/** The spec's 422 body; returns the distinct `loc`s of its entries, in order, for assertions. */
export function expectValidationBody(response: ApiResponse): (string | number)[][] {
  expect(response.status, response.text).toBe(422);
  expect(Object.keys(response.body)).toEqual(['detail']);
  expect(Array.isArray(response.body.detail)).toBe(true);
  expect(response.body.detail.length).toBeGreaterThan(0);
  for (const issue of response.body.detail) {
    expect(issue).toMatchObject({ loc: expect.any(Array), msg: expect.any(String), type: expect.any(String), ctx: expect.any(Object) });
    expect(Object.keys(issue).sort()).toEqual(['ctx', 'input', 'loc', 'msg', 'type']);
  }
  const locs = response.body.detail.map((issue: { loc: (string | number)[] }) => JSON.stringify(issue.loc));
  return [...new Set<string>(locs)].map((loc) => JSON.parse(loc) as (string | number)[]);
}
