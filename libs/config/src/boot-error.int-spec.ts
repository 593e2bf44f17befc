import { readFile } from 'node:fs/promises';
import { createServer } from 'node:net';

import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';

import { createTestDatabase } from '../../../test/support/database';
import { testPort } from '../../../test/support/ports';
import { describeBootFailure } from './boot-error';

/** The error pg gives when connecting to `url` fails. */
async function connectionError(url: string): Promise<unknown> {
  const client = new pg.Client({ connectionString: url });
  try {
    await client.connect();
  } catch (error) {
    return error;
  } finally {
    await client.end().catch(() => undefined);
  }
  throw new Error(`connected to ${url}`);
}

describe('describeBootFailure, for the database DATABASE_URL names', () => {
  const saved = process.env.DATABASE_URL;
  afterEach(() => {
    process.env.DATABASE_URL = saved;
  });
  const advice = 'Check DATABASE_URL (host, port, user, password, database) and that PostgreSQL runs there.';

  it('names the variable, where it points (no credentials) and what to check, for a server that does not answer', async () => {
    const url = `postgresql://postgres:secret@127.0.0.1:${await testPort()}/platform`;
    process.env.DATABASE_URL = url;
    const line = describeBootFailure('api', await connectionError(url));
    expect(line).toMatch(
      new RegExp(
        `^The api cannot start: the database DATABASE_URL names \\(127\\.0\\.0\\.1:\\d+/platform\\) cannot be reached: connect ECONNREFUSED `,
      ),
    );
    expect(line.endsWith(advice)).toBe(true);
    expect(line).not.toContain('secret');
  });

  it('never shows a password whose unencoded slash ends the address early, and says what to encode', async () => {
    const unreachable = await connectionError(`postgresql://127.0.0.1:${await testPort()}/platform`);
    for (const url of ['postgresql://app:8/Jx+Secret@127.0.0.1:5432/prod', 'postgresql://app:/Secret9@db:5432/prod']) {
      process.env.DATABASE_URL = url;
      const line = describeBootFailure('api', unreachable);
      expect(line).toContain('(an address whose user and password do not parse: percent-encode / ? # @ in the password) cannot be reached');
      expect(line).not.toMatch(/Secret|Jx|:8\b/);
    }
  });

  it('says a Unix socket that is not there cannot be reached', async () => {
    const url = 'postgresql://postgres@localhost/platform?host=/nonexistent/run/postgresql';
    process.env.DATABASE_URL = url;
    expect(describeBootFailure('api', await connectionError(url))).toMatch(
      /^The api cannot start: the database DATABASE_URL names \(localhost:5432\/platform\) cannot be reached: connect ENOENT /,
    );
  });

  it('says the server refused it, for a database that does not exist there', async () => {
    const url = new URL(await createTestDatabase());
    url.pathname = '/no_such_database';
    process.env.DATABASE_URL = url.toString();
    expect(describeBootFailure('worker', await connectionError(url.toString()))).toBe(
      `The worker cannot start: the database DATABASE_URL names (${url.hostname}:${url.port}/no_such_database) refused the connection: ` +
        `database "no_such_database" does not exist. ${advice}`,
    );
  });

  it('leaves other failures as they were: a port this process cannot listen on names its own variable', async () => {
    const holder = createServer();
    const port = await testPort();
    await new Promise<void>((done) => holder.listen(port, '127.0.0.1', done));
    const second = createServer();
    const error = await new Promise((resolve) => second.once('error', resolve).listen(port, '127.0.0.1'));
    holder.close();
    expect(describeBootFailure('api', error)).toMatch(/^The api cannot start: port \d+ on 127\.0\.0\.1 is already in use/);
    expect(describeBootFailure('api', new Error('boom'))).toBe('The api failed to start: boom (LOG_LEVEL=debug shows the stack)');
    // A file boot could not read is not the database, though its code (ENOENT) is a missing socket's too.
    const missingFile = await readFile('/nonexistent/components.mjs').catch((error: unknown) => error);
    expect(describeBootFailure('api', missingFile)).toMatch(/^The api failed to start: ENOENT: no such file or directory/);
  });
});
