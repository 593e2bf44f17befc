import { existsSync } from 'node:fs';

import { CliError, Terminal } from '@app/cli-terminal';

import { AdminCredential, CliEnv } from './cli-env';
import { ServiceDescriptor } from './discovery';
import { isLoopbackUrl } from './urls';

/**
 * Credentials travel only over https or to this machine, unless --allow-http says otherwise.
 * Called before the first request that carries a credential or returns a token.
 */
export function refusePlaintextCredential(url: string, allowHttp: boolean, what: string): void {
  if (new URL(url).protocol === 'http:' && !isLoopbackUrl(url) && !allowHttp) {
    throw new CliError(
      `Refusing to send ${what} to ${url} over plaintext HTTP.`,
      'Use an https:// URL, or pass --allow-http to send it over plaintext HTTP anyway.',
    );
  }
}

/**
 * A remote URL that came from a file in the working directory (or an existing client config) is
 * trusted only after a prompt or --yes: a checked-out repository must not redirect credentials.
 */
export async function confirmDiscoveredUrl(descriptor: ServiceDescriptor, yes: boolean, terminal: Terminal): Promise<void> {
  const fromFile = descriptor.url_source === 'env-file' || descriptor.url_source === 'client-config';
  if (!fromFile || isLoopbackUrl(descriptor.url) || yes) {
    return;
  }
  const where = descriptor.url_source === 'env-file' ? descriptor.url_source_file : `client configs (${descriptor.url_source_file})`;
  if (!terminal.interactive) {
    throw new CliError(
      `The URL in ${where} points to a remote host (${descriptor.url}).`,
      'Pass --url to target it explicitly, or --yes to trust it.',
    );
  }
  if (!(await terminal.confirm(`Trust SERVICE_URL=${descriptor.url} (from ${where})?`, true))) {
    throw new CliError('Aborted; no changes made.', 'Pass --url to choose the service explicitly.');
  }
}

/** Where `npm start` keeps a checkout's security key, relative to the checkout. */
const CHECKOUT_KEY_FILE = '.data/os-security-key';

/**
 * The admin credential: none for a service that checks none (auth_mode none); else SVC_ADMIN_TOKEN, else
 * OS_SECURITY_KEY, else a hidden prompt on a terminal or an error in --json and non-TTY runs. Whenever
 * there is one to send, the plaintext-HTTP gate applies first (before anyone types a secret).
 * `needs`: what the command's credential needs, said when there is none.
 */
export async function resolveAdminCredential(
  descriptor: ServiceDescriptor,
  env: CliEnv,
  terminal: Terminal,
  allowHttp: boolean,
  needs: string,
): Promise<AdminCredential | null> {
  // A service that checks no credential gains nothing from one, and the server answering may not be the
  // operator's service at all (another user's process on a default port): the exported credential stays here.
  if (descriptor.auth_mode === 'none') {
    return null;
  }
  refusePlaintextCredential(descriptor.url, allowHttp, 'the admin credential');
  if (env.adminToken) {
    return { value: env.adminToken, source: 'SVC_ADMIN_TOKEN' };
  }
  if (env.securityKey) {
    return { value: env.securityKey, source: 'OS_SECURITY_KEY' };
  }
  // In a checkout started with `npm start`, the key is at hand: say where, never what it is.
  const hint = existsSync(CHECKOUT_KEY_FILE)
    ? `${needs}\nThis checkout's security key is in ${CHECKOUT_KEY_FILE}: OS_SECURITY_KEY=$(cat ${CHECKOUT_KEY_FILE}) npx svc ...`
    : needs;
  if (!terminal.interactive) {
    throw new CliError(`This service requires an admin credential (auth mode: ${descriptor.auth_mode}).`, hint);
  }
  terminal.note(hint);
  const entered = (await terminal.secret('Admin credential for this service')).trim();
  if (!entered) {
    throw new CliError('No admin credential given.', hint);
  }
  return { value: entered, source: 'prompt' };
}
