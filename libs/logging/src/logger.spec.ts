import { QueryFailedError } from 'typeorm';
import { describe, expect, it } from 'vitest';

import { errorFields } from './logger';

describe('errors as logged', () => {
  it("keep a failed statement's text and error, never its parameters: they are callers' data, and can be a secret", () => {
    const error = new QueryFailedError(
      'INSERT INTO internal_secrets (name, value) VALUES ($1, $2)',
      ['internal_service_token', 'generated-secret-0123'],
      {
        message: 'could not write',
        code: '57P01',
      } as unknown as Error,
    );
    const logged = errorFields(error) as Record<string, unknown>;
    expect(logged).toMatchObject({
      type: 'QueryFailedError',
      message: 'could not write',
      query: expect.stringContaining('INSERT INTO internal_secrets'),
    });
    expect(JSON.stringify(logged)).not.toContain('generated-secret-0123');
  });

  it('drop the pool client a lost connection hangs on its error', () => {
    const error = Object.assign(new Error('Connection terminated unexpectedly'), { client: { connectionParameters: { password: 'pw' } } });
    expect(errorFields(error)).not.toHaveProperty('client');
  });
});
