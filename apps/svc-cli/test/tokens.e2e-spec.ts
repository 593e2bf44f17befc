import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { CliSandbox, cliSandbox, LiveService, runCli, startService } from '../../../test/support/cli';
import { runCommand } from '../../../test/support/cli-in-process';
import { query } from '../../../test/support/database';
import { call } from '../../../test/support/http';
import { mintAccount, ROOT_KEY, uniqueName } from '../../../test/support/principals';
import { ACCOUNT_KEYS } from '../../../test/support/wire-shapes';

const DEFAULT_SCOPES = ['agents:run', 'teams:run', 'workflows:run', 'sessions:read', 'config:read'];
describe('svc tokens against a live api and worker (security_key mode)', () => {
  let service: LiveService;
  let sandbox: CliSandbox;
  let asAdmin: Record<string, string>;

  beforeAll(async () => {
    service = await startService({ OS_SECURITY_KEY: ROOT_KEY });
    sandbox = cliSandbox();
    asAdmin = { SERVICE_URL: service.api.url, OS_SECURITY_KEY: ROOT_KEY };
  });
  afterAll(() => service?.stop());

  it('create --json prints the account plus its token once, with the default scopes and 90 days', async () => {
    const name = uniqueName('cli');
    const run = await runCli(['tokens', 'create', name, '--json'], sandbox, { env: asAdmin });
    expect(run.code).toBe(0);
    const account = run.json();
    expect(Object.keys(account).sort()).toEqual([...ACCOUNT_KEYS, 'token'].sort());
    expect(account).toMatchObject({ name, principal: `sa:${name}`, scopes: DEFAULT_SCOPES, revoked_at: null, last_used_at: null });
    expect(account.token).toMatch(/^svc_pat_[0-9A-Za-z]{40,44}$/);
    expect(account.expires_at - account.created_at).toBe(90 * 86_400);
    // The token works against the real api.
    expect((await call(service.api.url, 'GET', '/config', { token: account.token })).status).toBe(200);
  });

  it('create passes repeated -s scopes, --expires and --privileged', async () => {
    const name = uniqueName('cli');
    const run = await runCommand(
      ['tokens', 'create', name, '-s', 'agents:run', '-s', 'sessions:write', '--expires', '30', '--privileged', '--json'],
      sandbox,
      { env: asAdmin },
    );
    expect(run.code).toBe(0);
    const account = run.json();
    expect(account.scopes).toEqual(['agents:run', 'sessions:write']);
    expect(account.expires_at - account.created_at).toBe(30 * 86_400);
    const never = (
      await runCommand(['tokens', 'create', uniqueName('cli'), '--expires', 'never', '--json'], sandbox, { env: asAdmin })
    ).json();
    expect(never.expires_at).toBeNull();
    const listed = await runCommand(
      ['tokens', 'create', uniqueName('cli'), '-s', 'agents:run, teams:run', '-s', 'config:read', '--json'],
      sandbox,
      {
        env: asAdmin,
      },
    );
    expect(listed.json().scopes).toEqual(['agents:run', 'teams:run', 'config:read']);
  });

  it('refuses privileged scopes without --privileged before any request (exit 1)', async () => {
    const name = uniqueName('cli');
    const run = await runCommand(['tokens', 'create', name, '-s', 'platform:admin', '--json'], sandbox, { env: asAdmin });
    expect(run.code).toBe(1);
    expect(run.json()).toEqual({ error: 'Privileged scope(s) need --privileged: platform:admin', hint: expect.any(String) });
    expect(await query(service.databaseUrl, 'SELECT 1 FROM service_accounts WHERE name = $1', [name])).toHaveLength(0);
  });

  it('a scope the service does not know is its 400, with a hint saying what a scope looks like', async () => {
    const name = uniqueName('cli');
    const run = await runCommand(['tokens', 'create', name, '-s', 'agent:run', '--json'], sandbox, { env: asAdmin });
    expect(run.code).toBe(1);
    expect(run.json()).toEqual({
      error: `Could not create service account '${name}': Invalid scope(s): agent:run`,
      hint: expect.stringMatching(
        /^A scope is <resource>:<action> or <resource>:<id>:<action>, or platform:admin; resources: agents, teams, .*; actions: read, run, write, delete\.$/,
      ),
    });
  });

  it('reports a name conflict as {error, hint} with exit 1', async () => {
    const name = uniqueName('cli');
    await mintAccount(service.api.url, ROOT_KEY, { name });
    const run = await runCommand(['tokens', 'create', name, '--json'], sandbox, { env: asAdmin });
    expect(run.code).toBe(1);
    expect(run.json()).toEqual({
      error: `A service account named '${name}' already exists.`,
      hint: `Rotate its token (svc tokens rotate ${name}), revoke it first (svc tokens revoke ${name}), or pick a different name.`,
    });
  });

  it('a malformed name, and a bad --expires (over 3650 days too), are usage errors (exit 2, stderr, no JSON)', async () => {
    for (const name of ['Bad_Name', `a${'b'.repeat(63)}`]) {
      const run = await runCli(['tokens', 'create', name, '--json'], sandbox, { env: asAdmin });
      expect(run.code, name).toBe(2);
      expect(run.stdout).toBe('');
      expect(run.stderr).toContain(`Invalid service account name '${name}': use a lowercase slug`);
    }
    for (const expires of ['0', 'soon', '-3', '1.5d', '2w', '', '3651', '4000d']) {
      const run = await runCli(['tokens', 'create', 'ok-name', '--expires', expires, '--json'], sandbox, { env: asAdmin });
      expect(run.code, expires).toBe(2);
      expect(run.stdout, expires).toBe('');
      expect(run.stderr, expires).toContain('--expires');
    }
    const tooLong = await runCli(['tokens', 'create', 'ok-name', '--expires', '3651'], sandbox, { env: asAdmin });
    expect(tooLong.stderr).toContain('at most 3650 days');
    const longest = await runCli(['tokens', 'create', uniqueName('cli'), '--expires', '3650d', '--json'], sandbox, { env: asAdmin });
    expect(longest.code).toBe(0);
  });

  it('usage errors exit 2 on stderr with no JSON', async () => {
    for (const args of [
      ['tokens', 'create', '--json'],
      ['tokens', 'create', 'x', '--bogus', '--json'],
      ['tokens', 'frobnicate', '--json'],
      ['tokens'],
      ['tokens', 'create', 'x', '-s'],
      // A value that names no scope: an empty list would mint a token that may do nothing.
      ['tokens', 'create', 'x', '-s', ','],
      ['tokens', 'create', 'x', '-s', ''],
    ]) {
      const run = await runCli(args, sandbox, { env: asAdmin });
      expect(run.code, args.join(' ')).toBe(2);
      expect(run.stdout).toBe('');
      expect(run.stderr).not.toBe('');
    }
  });

  it('list --json returns every account including revoked ones, without tokens or hashes', async () => {
    const kept = await mintAccount(service.api.url, ROOT_KEY);
    const gone = await mintAccount(service.api.url, ROOT_KEY);
    await call(service.api.url, 'DELETE', `/service-accounts/${gone.id}`, { token: ROOT_KEY });
    const run = await runCommand(['tokens', 'list', '--json'], sandbox, { env: asAdmin });
    expect(run.code).toBe(0);
    const { service_accounts: accounts } = run.json();
    expect(Object.keys(run.json())).toEqual(['service_accounts']);
    const byName = new Map(accounts.map((account: { name: string }) => [account.name, account]));
    expect(byName.get(kept.name)).toMatchObject({ id: kept.id, revoked_at: null });
    expect((byName.get(gone.name) as { revoked_at: number }).revoked_at).toEqual(expect.any(Number));
    for (const account of accounts) {
      expect(Object.keys(account).sort()).toEqual([...ACCOUNT_KEYS, 'expires_soon'].sort());
    }
    expect(run.stdout).not.toContain(kept.token);
  });

  it('list pages through more than one page of accounts', async () => {
    const total = (await query<{ count: string }>(service.databaseUrl, 'SELECT count(*) FROM service_accounts'))[0].count;
    const missing = Math.max(0, 101 - Number(total));
    await Promise.all(Array.from({ length: missing }, () => mintAccount(service.api.url, ROOT_KEY)));
    const run = await runCommand(['tokens', 'list', '--json'], sandbox, { env: asAdmin });
    const count = (await query<{ count: string }>(service.databaseUrl, 'SELECT count(*) FROM service_accounts'))[0].count;
    expect(run.json().service_accounts).toHaveLength(Number(count));
    expect(Number(count)).toBeGreaterThan(100);
  });

  it('human list prints a table with prefixes, never tokens', async () => {
    const account = await mintAccount(service.api.url, ROOT_KEY);
    const run = await runCommand(['tokens', 'list'], sandbox, { env: { ...asAdmin, NO_COLOR: '1' } });
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/^Name\s+Token\s+Scopes\s+Expires\s+Last used\s+Status/);
    expect(run.stdout).toContain(`${account.token_prefix}…`);
    expect(run.stdout).not.toContain(account.token);
    expect(run.stdout).not.toContain('\u001b[');
  });

  it('list marks active accounts that expire within 14 days (expires_soon, and the Status column)', async () => {
    const soon = await mintAccount(service.api.url, ROOT_KEY, { expires_in_days: 7 });
    const later = await mintAccount(service.api.url, ROOT_KEY, { expires_in_days: 15 });
    const never = await mintAccount(service.api.url, ROOT_KEY, { never_expires: true });
    const revoked = await mintAccount(service.api.url, ROOT_KEY, { expires_in_days: 3 });
    await call(service.api.url, 'DELETE', `/service-accounts/${revoked.id}`, { token: ROOT_KEY });
    const expired = await mintAccount(service.api.url, ROOT_KEY, { expires_in_days: 3 });
    await query(service.databaseUrl, `UPDATE service_accounts SET expires_at = now() - interval '1 minute' WHERE id = $1`, [expired.id]);

    const listed = await runCommand(['tokens', 'list', '--json'], sandbox, { env: asAdmin });
    expect(listed.code).toBe(0);
    const byName = new Map<string, { expires_soon: boolean }>(
      listed.json().service_accounts.map((account: { name: string }) => [account.name, account]),
    );
    expect([soon, later, never, revoked, expired].map((account) => byName.get(account.name)!.expires_soon)).toEqual([
      true,
      false,
      false,
      false,
      false,
    ]);

    const table = await runCommand(['tokens', 'list'], sandbox, { env: { ...asAdmin, NO_COLOR: '1' } });
    const row = (name: string) => table.stdout.split('\n').find((line) => line.startsWith(`${name} `))!;
    expect(row(soon.name)).toMatch(/expires soon$/);
    expect(row(later.name)).toMatch(/active$/);
    expect(row(revoked.name)).toMatch(/revoked$/);
    expect(row(expired.name)).toMatch(/expired$/);
  });

  it('rotate --json prints the account with its new token, like create; the old token keeps working for the grace', async () => {
    const account = await mintAccount(service.api.url, ROOT_KEY);
    const run = await runCommand(['tokens', 'rotate', account.name, '--json'], sandbox, { env: asAdmin });
    expect(run.code, run.stdout + run.stderr).toBe(0);
    const rotated = run.json();
    expect(Object.keys(rotated).sort()).toEqual([...ACCOUNT_KEYS, 'token'].sort());
    expect(rotated).toMatchObject({
      id: account.id,
      name: account.name,
      scopes: DEFAULT_SCOPES,
      revoked_at: null,
      token_prefix: rotated.token.slice(0, 15),
    });
    expect(rotated.token).not.toBe(account.token);
    expect((await call(service.api.url, 'GET', '/config', { token: account.token })).status).toBe(200);
    expect((await call(service.api.url, 'GET', '/config', { token: rotated.token })).status).toBe(200);
    const [row] = await query<{ seconds: number }>(
      service.databaseUrl,
      'SELECT extract(epoch FROM previous_token_expires_at - now())::int AS seconds FROM service_accounts WHERE id = $1',
      [account.id],
    );
    expect(Math.abs(row.seconds - 3600)).toBeLessThan(30);
  });

  it('rotate prints the new token once and when the old one stops; --grace 0 ends it at once', async () => {
    const account = await mintAccount(service.api.url, ROOT_KEY);
    const run = await runCommand(['tokens', 'rotate', account.name, '--grace', '15m'], sandbox, { env: { ...asAdmin, NO_COLOR: '1' } });
    expect(run.code, run.stderr).toBe(0);
    const token = /^(svc_pat_[0-9A-Za-z]+)$/m.exec(run.stdout)![1];
    expect(run.stdout.split(token)).toHaveLength(2);
    expect(run.stdout).toContain(`The previous token (${account.token_prefix}…) keeps working for 15m, until `);
    // Only one earlier token is kept: the next rotation ends this grace, and the user learns it now.
    expect(run.stdout).toContain(', unless this account is rotated again before then: that ends it at once.');
    expect(run.stdout).toContain('New token (shown once; store it now):');
    expect((await call(service.api.url, 'GET', '/config', { token })).status).toBe(200);

    const now = await runCommand(['tokens', 'rotate', account.name, '--grace', '0', '--json'], sandbox, { env: asAdmin });
    expect(now.code).toBe(0);
    expect((await call(service.api.url, 'GET', '/config', { token })).status).toBe(401);
    expect((await call(service.api.url, 'GET', '/config', { token: now.json().token })).status).toBe(200);
  });

  it('rotate or revoke of a revoked or expired account says so, and how to get a working one, rather than that it does not exist', async () => {
    const revoked = await mintAccount(service.api.url, ROOT_KEY);
    await call(service.api.url, 'DELETE', `/service-accounts/${revoked.id}`, { token: ROOT_KEY });
    const rotateRevoked = await runCommand(['tokens', 'rotate', revoked.name, '--json'], sandbox, { env: asAdmin });
    expect(rotateRevoked.code).toBe(1);
    expect(rotateRevoked.json()).toEqual({
      error: expect.stringMatching(
        new RegExp(`^Service account '${revoked.name}' is revoked \\(since \\d{4}-\\d\\d-\\d\\dT[\\d:.]+Z\\)\\.$`),
      ),
      hint: `Mint a new one with: svc tokens create ${revoked.name}`,
    });

    const expired = await mintAccount(service.api.url, ROOT_KEY);
    await query(service.databaseUrl, `UPDATE service_accounts SET expires_at = now() - interval '1 hour' WHERE id = $1`, [expired.id]);
    for (const command of [
      ['tokens', 'rotate', expired.name, '--json'],
      ['tokens', 'revoke', expired.name, '--yes', '--json'],
    ]) {
      const run = await runCommand(command, sandbox, { env: asAdmin });
      expect(run.code, command.join(' ')).toBe(1);
      expect(run.json()).toEqual({
        error: expect.stringMatching(new RegExp(`^Service account '${expired.name}' expired at .+Z: its token no longer works\\.$`)),
        hint: `Mint a new one with: svc tokens create ${expired.name}`,
      });
    }
  });

  it('rotate of an unknown name exits 1 with {error, hint}; a bad --grace is a usage error (exit 2) before any request', async () => {
    const unknown = await runCli(['tokens', 'rotate', 'no-such-account', '--json'], sandbox, { env: asAdmin });
    expect(unknown.code).toBe(1);
    expect(unknown.json()).toEqual({ error: "No service account named 'no-such-account' found.", hint: 'List them with: svc tokens list' });

    const account = await mintAccount(service.api.url, ROOT_KEY);
    for (const grace of ['soon', '-5', '1.5h', '2d', '86401', '1w', '']) {
      const run = await runCli(['tokens', 'rotate', account.name, '--grace', grace, '--json'], sandbox, { env: asAdmin });
      expect(run.code, grace).toBe(2);
      expect(run.stdout, grace).toBe('');
      expect(run.stderr, grace).toContain('--grace');
    }
    const missing = await runCli(['tokens', 'rotate', '--json'], sandbox, { env: asAdmin });
    expect(missing.code).toBe(2);
    const [row] = await query<{ previous_token_hash: string | null }>(
      service.databaseUrl,
      'SELECT previous_token_hash FROM service_accounts WHERE id = $1',
      [account.id],
    );
    expect(row.previous_token_hash).toBeNull();
  });

  it('revoke --json revokes without a prompt off a TTY; the token stops working', async () => {
    const account = await mintAccount(service.api.url, ROOT_KEY);
    const run = await runCommand(['tokens', 'revoke', account.name, '--json'], sandbox, { env: asAdmin });
    expect(run.code).toBe(0);
    const { revoked } = run.json();
    expect(revoked).toMatchObject({ id: account.id, name: account.name, revoked_at: expect.any(Number) });
    expect(Object.keys(revoked).sort()).toEqual(ACCOUNT_KEYS);
    expect((await call(service.api.url, 'GET', '/config', { token: account.token })).status).toBe(401);
  });

  it('revoke of a name revoked before says so and succeeds, changing nothing', async () => {
    const account = await mintAccount(service.api.url, ROOT_KEY);
    expect((await runCommand(['tokens', 'revoke', account.name, '--json'], sandbox, { env: asAdmin })).code).toBe(0);
    const first = (await call(service.api.url, 'GET', `/service-accounts?limit=100`, { token: ROOT_KEY })).body.data.find(
      (row: { id: string }) => row.id === account.id,
    );
    const again = await runCommand(['tokens', 'revoke', account.name], sandbox, { env: asAdmin });
    expect(again.code).toBe(0);
    expect(again.stdout).toMatch(
      new RegExp(
        `Service account '${account.name}' was already revoked \\(at \\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d:\\d\\d UTC\\); nothing to do\\.`,
      ),
    );
    const json = await runCommand(['tokens', 'revoke', account.name, '--json'], sandbox, { env: asAdmin });
    expect(json.json().revoked).toMatchObject({ id: account.id, revoked_at: first.revoked_at });
  });

  it('revoke of an unknown name exits 1 with an error', async () => {
    const run = await runCommand(['tokens', 'revoke', 'no-such-account', '--yes', '--json'], sandbox, { env: asAdmin });
    expect(run.code).toBe(1);
    expect(run.json()).toEqual({ error: "No service account named 'no-such-account' found.", hint: 'List them with: svc tokens list' });
  });

  it('takes SVC_ADMIN_TOKEN before OS_SECURITY_KEY', async () => {
    const rejected = await runCommand(['tokens', 'list', '--json'], sandbox, {
      env: { ...asAdmin, SVC_ADMIN_TOKEN: 'not-a-valid-credential' },
    });
    expect(rejected.code).toBe(1);
    expect(rejected.json()).toEqual({
      error: expect.stringMatching(/^The service did not accept the admin credential/),
      hint: 'It is wrong, expired or revoked. svc sent SVC_ADMIN_TOKEN, which goes before OS_SECURITY_KEY: check or replace it.',
    });
    // With the key alone, the hint names the key.
    const wrongKey = await runCommand(['tokens', 'list', '--json'], sandbox, {
      env: { SERVICE_URL: service.api.url, OS_SECURITY_KEY: 'wrong' },
    });
    expect(wrongKey.code).toBe(1);
    expect(wrongKey.json().hint).toBe(
      'It is wrong, expired or revoked. svc sent OS_SECURITY_KEY (SVC_ADMIN_TOKEN is unset): check or replace it.',
    );
    const admin = await mintAccount(service.api.url, ROOT_KEY, { scopes: ['platform:admin'], privileged: true });
    const accepted = await runCommand(['tokens', 'create', uniqueName('cli'), '--json'], sandbox, {
      env: { SERVICE_URL: service.api.url, SVC_ADMIN_TOKEN: admin.token, OS_SECURITY_KEY: 'wrong' },
    });
    expect(accepted.code).toBe(0);
  });

  it('without a credential, the hint names what each command group needs, and where a checkout started with npm start keeps its key', async () => {
    const hintOf = async (args: string[], cwd?: string) =>
      (await runCommand([...args, '--json'], sandbox, { env: { SERVICE_URL: service.api.url }, cwd })).json().hint as string;
    expect(await hintOf(['tokens', 'list'])).toMatch(/service_accounts scopes/);
    expect(await hintOf(['jobs', 'list'])).toMatch(/need platform:admin/);
    expect(await hintOf(['jobs', 'list'])).not.toMatch(/service_accounts/);
    expect(await hintOf(['schedules', 'list'])).toMatch(/schedules:read/);
    expect(await hintOf(['schedules', 'list'])).not.toMatch(/service_accounts/);
    expect(await hintOf(['tokens', 'list'])).not.toContain('.data/os-security-key');

    const checkout = cliSandbox();
    mkdirSync(join(checkout.cwd, '.data'));
    writeFileSync(join(checkout.cwd, '.data', 'os-security-key'), 'the-checkout-key\n');
    const hint = await hintOf(['tokens', 'list'], checkout.cwd);
    expect(hint).toContain(
      "This checkout's security key is in .data/os-security-key: OS_SECURITY_KEY=$(cat .data/os-security-key) npx svc ...",
    );
    expect(hint).not.toContain('the-checkout-key');
  });

  it('an unknown name for a service-account credential may be one it cannot see, and says so', async () => {
    const accountsAdmin = await mintAccount(service.api.url, ROOT_KEY, {
      scopes: ['service_accounts:read', 'service_accounts:write'],
      privileged: true,
    });
    const hidden = await mintAccount(service.api.url, ROOT_KEY);
    const run = await runCommand(['tokens', 'rotate', hidden.name, '--json'], sandbox, {
      env: { SERVICE_URL: service.api.url, SVC_ADMIN_TOKEN: accountsAdmin.token },
    });
    expect(run.code).toBe(1);
    expect(run.json().error).toBe(`No service account named '${hidden.name}' found (or not visible to this credential).`);
  });

  it('without a credential on an enforcing service, --json and non-TTY runs fail instead of prompting', async () => {
    for (const args of [
      ['tokens', 'list', '--json'],
      ['tokens', 'list'],
    ]) {
      const run = await runCommand(args, sandbox, { env: { SERVICE_URL: service.api.url } });
      expect(run.code).toBe(1);
      const message = 'This service requires an admin credential (auth mode: security_key).';
      if (args.includes('--json')) {
        expect(run.json()).toEqual({ error: message, hint: expect.stringContaining('SVC_ADMIN_TOKEN') });
      } else {
        expect(run.stdout).toBe('');
        expect(run.stderr).toContain(message);
      }
    }
  });
});
