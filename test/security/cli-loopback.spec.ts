import { writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';

import { CliSandbox, cliSandbox, runCli } from '../support/cli';
import { createTestDatabase, query } from '../support/database';
import { ROOT_KEY, uniqueName } from '../support/principals';
import { RunningApi, startApi } from '../support/processes';
import { remoteAddress, TcpProxy } from '../support/tcp-proxy';

/**
 * A host name that only looks like loopback. svc used to treat any name starting with `127.` (or ending
 * in `.localhost`) as this machine, and then sent the admin credential over plaintext http:// to it
 * without --allow-http, and trusted such a URL from a checked-out .env file without asking.
 *
 * The name does not resolve here, and a CLI that merely failed its DNS lookup would look like one that
 * refused. So the built CLI runs with a preload that resolves the name, as an attacker's DNS would, to
 * a proxy on a non-loopback address of this machine (the attacker's host) in front of a real api. Every
 * byte the CLI sends there is recorded. Discovery does reach the host (GET /health and /info carry no
 * credential: that is how svc learns whether the service wants one); the credential must not.
 */
const ATTACKER_HOST = '127.attacker.example';
const RESOLVER = resolve('test/support/resolve-hosts.cjs');

/** Signs that the CLI failed to reach the host instead of refusing it. */
const NETWORK_FAILURE = /ENOTFOUND|EAI_AGAIN|getaddrinfo|ECONNREFUSED|Could not reach|No running service found/i;

describe('svc and a host name that only looks like loopback', () => {
  let databaseUrl: string;
  let api: RunningApi;
  let attacker: TcpProxy;
  let attackerUrl: string;
  let sandbox: CliSandbox;

  beforeAll(async () => {
    databaseUrl = await createTestDatabase();
    api = await startApi({ DATABASE_URL: databaseUrl, OS_SECURITY_KEY: ROOT_KEY, MCP_ENABLED: 'false' });
  });
  afterAll(() => api?.stop());
  beforeEach(async () => {
    sandbox = cliSandbox();
    const target = new URL(api.url);
    attacker = new TcpProxy(target.hostname, Number(target.port));
    const port = await attacker.listen(0, remoteAddress());
    attackerUrl = `http://${ATTACKER_HOST}:${port}`;
    return () => attacker.cut();
  });

  /** The built svc, with ATTACKER_HOST resolving to the attacker's proxy and OS_SECURITY_KEY exported. */
  const svc = (args: string[]) =>
    runCli([...args, '--json'], sandbox, {
      env: {
        OS_SECURITY_KEY: ROOT_KEY,
        NODE_OPTIONS: `--require ${RESOLVER}`,
        TEST_RESOLVE_HOSTS: JSON.stringify({ [ATTACKER_HOST]: remoteAddress() }),
      },
    });

  /** The attacker's host was reached by name (so the lookup worked) and never saw the credential. */
  const expectReachedWithoutCredential = () => {
    const wire = attacker.received();
    expect(wire).toContain('GET /health');
    expect(wire.toLowerCase()).toContain(`host: ${ATTACKER_HOST}:`);
    expect(wire.toLowerCase()).not.toContain('authorization');
    expect(wire).not.toContain(ROOT_KEY);
  };

  it(`svc refuses to send the admin credential in clear text to http://${ATTACKER_HOST}`, async () => {
    const name = uniqueName('attacker');
    const refusals: Array<[string[], string]> = [
      [['tokens', 'list'], 'the admin credential'],
      [['tokens', 'create', name], 'the admin credential and the new token'],
    ];
    for (const [args, what] of refusals) {
      const run = await svc([...args, '--url', attackerUrl]);
      expect(`${run.stdout}\n${run.stderr}`).not.toMatch(NETWORK_FAILURE);
      expect(run.code, run.stdout + run.stderr).toBe(1);
      expect(run.json()).toEqual({
        error: `Refusing to send ${what} to ${attackerUrl} over plaintext HTTP.`,
        hint: 'Use an https:// URL, or pass --allow-http to send it over plaintext HTTP anyway.',
      });
    }
    expectReachedWithoutCredential();
    expect(await query(databaseUrl, 'SELECT 1 FROM service_accounts WHERE name = $1', [name])).toHaveLength(0);
  });

  it(`svc does not trust SERVICE_URL=http://${ATTACKER_HOST} from a checked-out .env without --yes`, async () => {
    writeFileSync(join(sandbox.cwd, '.env'), `SERVICE_URL=${attackerUrl}\n`);
    const run = await svc(['tokens', 'list']);
    expect(`${run.stdout}\n${run.stderr}`).not.toMatch(NETWORK_FAILURE);
    expect(run.code, run.stdout + run.stderr).toBe(1);
    expect(run.json()).toEqual({
      error: `The URL in .env points to a remote host (${attackerUrl}).`,
      hint: 'Pass --url to target it explicitly, or --yes to trust it.',
    });
    expectReachedWithoutCredential();
  });

  it('control: the same command against the service on localhost is not refused', async () => {
    const name = uniqueName('local');
    const run = await svc(['tokens', 'create', name, '--url', api.url.replace('127.0.0.1', 'localhost')]);
    expect(run.code, run.stdout + run.stderr).toBe(0);
    expect(run.json().token).toMatch(/^svc_pat_/);
    expect(await query(databaseUrl, 'SELECT 1 FROM service_accounts WHERE name = $1', [name])).toHaveLength(1);
  });
});

/**
 * A server on this machine that says it checks no credential (auth_mode none): another local user's
 * process on a default port, or an unrelated app a .env names. svc has nothing to gain by sending it the
 * admin credential an operator exported, so it sends none.
 */
describe('svc and a service that checks no credential', () => {
  let api: RunningApi;
  let proxy: TcpProxy;
  let port: number;

  beforeAll(async () => {
    api = await startApi({ DATABASE_URL: await createTestDatabase(), MCP_ENABLED: 'false' });
    const target = new URL(api.url);
    proxy = new TcpProxy(target.hostname, Number(target.port));
    port = await proxy.listen();
  });
  afterAll(async () => {
    await proxy?.cut();
    await api?.stop();
  });

  it('is not sent the exported admin credential', async () => {
    for (const args of [
      ['jobs', 'stats'],
      ['schedules', 'list'],
      ['tokens', 'list'],
    ]) {
      const run = await runCli([...args, '--url', `http://127.0.0.1:${port}`, '--json'], cliSandbox(), {
        env: { OS_SECURITY_KEY: ROOT_KEY, SVC_ADMIN_TOKEN: 'svc_pat_ExportedAdminToken0123456789' },
      });
      expect(run.code, `${args.join(' ')}: ${run.stdout}${run.stderr}`).toBe(0);
    }
    const wire = proxy.received();
    expect(wire).toContain('GET /service-accounts');
    expect(wire.toLowerCase()).not.toContain('authorization');
    expect(wire).not.toContain(ROOT_KEY);
    expect(wire).not.toContain('ExportedAdminToken');
  });
});
