import { QueryFailedError } from 'typeorm';
import { describe, expect, it } from 'vitest';

import { errorFields, loggableUrl } from './logger';

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

describe('request URLs as logged', () => {
  const token = 'svc_pat_QueryStringSecret0123456789';
  const jwt = 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhbGljZSJ9.c2lnbmF0dXJl';

  it('keep a URL without a query, and a query without credentials, as they are', () => {
    expect(loggableUrl('/service-accounts')).toBe('/service-accounts');
    expect(loggableUrl('/service-accounts?limit=5&page=2')).toBe('/service-accounts?limit=5&page=2');
  });

  it('replace the value of a parameter named as a credential', () => {
    expect(loggableUrl(`/x?limit=5&access_token=${token}&Token=${token}`)).toBe('/x?limit=5&access_token=[redacted]&Token=[redacted]');
  });

  it('replace it when the name is percent-escaped, as the api decodes it', () => {
    const logged = loggableUrl(`/x?%74oken=${token}&access%5Ftoken=${token}&api%5fkey=sk-0123456789abcdef`);
    expect(logged).toBe('/x?%74oken=[redacted]&access%5Ftoken=[redacted]&api%5fkey=[redacted]');
  });

  it("replace this service's tokens and JWTs under any name, escaped or not", () => {
    const logged = loggableUrl(
      `/x?limit=5&auth=${token}&bearer=Bearer%20${jwt}&sch=svc%5Fsch_00000000-0000-0000-0000-000000000000.1.mac&${token}`,
    );
    expect(logged).toBe('/x?limit=5&auth=[redacted]&bearer=[redacted]&sch=[redacted]&[redacted]');
    expect(logged).not.toContain('QueryStringSecret');
    expect(logged).not.toContain('eyJzdWIi');
  });
});
