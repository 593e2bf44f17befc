import { BlockList, isIP } from 'node:net';

/**
 * Addresses whose traffic never leaves this machine: 127.0.0.0/8 and ::1, plus the unspecified
 * addresses 0.0.0.0 and ::, which the OS connects to this host or refuses (a server started with
 * HOST=0.0.0.0 is often addressed as http://0.0.0.0:7777); connecting to them cannot reach another
 * machine. Only these exact addresses: nothing else in 0.0.0.0/8. BlockList also matches an
 * IPv4-mapped IPv6 address (::ffff:127.0.0.1) against the IPv4 rules: that is the IPv4 address
 * itself, and the connection goes there.
 */
const THIS_MACHINE = new BlockList();
THIS_MACHINE.addSubnet('127.0.0.0', 8, 'ipv4');
THIS_MACHINE.addAddress('::1', 'ipv6');
THIS_MACHINE.addAddress('0.0.0.0', 'ipv4');
THIS_MACHINE.addAddress('::', 'ipv6');

/**
 * The one loopback rule (the CLI's plaintext-HTTP and trust gates, and JWKS URLs over http): is
 * `hostname` one whose traffic never leaves this machine? True only for an IP literal in
 * THIS_MACHINE or the name `localhost` (any case, optionally with the one trailing dot of its fully
 * qualified form). No other name counts, whatever it starts or ends with: `127.evil.example` and
 * `evil.localhost` are names a resolver can point anywhere.
 *
 * Pass the hostname as a WHATWG URL gives it, which is the host fetch then connects to: the parser
 * lower-cases names, rewrites every IPv4 spelling (`0x7f.1`, `2130706433`, `0177.0.0.1`,
 * `127.0.0.1.`) to dotted decimal, and IPv6 to its compressed form in brackets. The decision is made
 * on that normalised form, so those spellings of 127.0.0.1 are loopback, as the OS would treat them.
 */
export function isLoopbackHost(hostname: string): boolean {
  const host = hostname.replace(/^\[(.*)\]$/, '$1').toLowerCase();
  const family = isIP(host);
  if (family !== 0) {
    return THIS_MACHINE.check(host, family === 4 ? 'ipv4' : 'ipv6');
  }
  return host === 'localhost' || host === 'localhost.';
}

/**
 * Whether a server bound to `host` is reachable only from this machine: a loopback address or name, not the
 * unspecified 0.0.0.0 or :: (every interface), which isLoopbackHost counts as loopback for connecting to.
 */
export function listensOnLoopbackOnly(host: string): boolean {
  return isLoopbackHost(host) && !['0.0.0.0', '::', '[::]'].includes(host);
}

/**
 * Whether a browser page may drive this service (MCP, where the transport spec requires it, and /ws,
 * which CORS does not cover): a request carrying a browser Origin is served only when that origin is
 * this service's public origin or a loopback one (isLoopbackHost: a page a rebinding attacker serves
 * has its own name as origin, and no name passes by its prefix). No Origin: not a browser's page.
 */
export function isAllowedOrigin(origin: string | undefined, publicUrl: string): boolean {
  if (!origin) {
    return true;
  }
  try {
    const url = new URL(origin);
    return url.origin === new URL(publicUrl).origin || isLoopbackHost(url.hostname);
  } catch {
    return false;
  }
}
