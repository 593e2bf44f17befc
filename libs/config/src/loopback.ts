import { isIPv4 } from 'node:net';

/**
 * Is `hostname` (as a WHATWG URL gives it: lower case, IPv6 in brackets, IPv4 in dotted
 * decimal) an address that never leaves this machine? Only `localhost` itself, an IPv4 literal in
 * 127.0.0.0/8 and `[::1]`: never a name judged by its prefix or suffix, which anyone can register
 * (`127.evil.example`, `localhost.evil.example`). A trailing dot names the same host.
 */
export function isLoopbackHost(hostname: string): boolean {
  const host = hostname.toLowerCase().replace(/\.$/, '');
  return host === 'localhost' || host === '[::1]' || host === '::1' || (isIPv4(host) && host.startsWith('127.'));
}
