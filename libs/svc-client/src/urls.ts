import { BlockList, isIP } from 'node:net';

import { CliError } from '@app/cli-terminal';

/** A base URL as the CLI keeps it: http(s), no trailing slash, no query or fragment. */
export function normalizeBaseUrl(raw: string, from: string): string {
  let parsed: URL;
  try {
    parsed = new URL(raw.trim());
  } catch {
    throw new CliError(`Invalid service URL: ${raw} (from ${from})`, 'Use a full URL such as http://localhost:7777.');
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    throw new CliError(`Invalid service URL: ${raw} (from ${from})`, 'Only http:// and https:// URLs are supported.');
  }
  return `${parsed.origin}${parsed.pathname}`.replace(/\/+$/, '');
}

function bareHost(url: URL): string {
  return url.hostname.replace(/^\[|\]$/g, '').toLowerCase();
}

/**
 * Addresses whose traffic never leaves this machine: 127.0.0.0/8 and ::1, plus the unspecified
 * addresses 0.0.0.0 and ::, which the OS connects to this host or refuses (a server started with
 * HOST=0.0.0.0 is often addressed as http://0.0.0.0:7777); connecting to them cannot reach another
 * machine. Only these exact addresses: nothing else in 0.0.0.0/8.
 * BlockList also matches an IPv4-mapped IPv6 address (::ffff:127.0.0.1) against the IPv4 rules:
 * that is the IPv4 address itself, and the connection goes there.
 */
const THIS_MACHINE = new BlockList();
THIS_MACHINE.addSubnet('127.0.0.0', 8, 'ipv4');
THIS_MACHINE.addAddress('::1', 'ipv6');
THIS_MACHINE.addAddress('0.0.0.0', 'ipv4');
THIS_MACHINE.addAddress('::', 'ipv6');

/**
 * The one loopback rule of the CLI: whether a request to this URL stays on this machine, so that
 * a credential may go over plaintext http:// and a URL from a file needs no prompt. True only for an
 * IP literal in THIS_MACHINE or the name `localhost` (any case, optionally with the one trailing dot
 * of its fully qualified form). No other name counts, whatever it starts or ends with:
 * `127.attacker.example` and `evil.localhost` are names a resolver can point anywhere.
 *
 * The decision is made on the host as the WHATWG URL parser gives it, which is the host fetch then
 * connects to: it lower-cases names and rewrites every IPv4 spelling (`0x7f.1`, `2130706433`,
 * `0177.0.0.1`, `127.0.0.1.`) to dotted decimal, and IPv6 to its compressed form in brackets.
 */
export function isLoopbackUrl(url: string): boolean {
  const host = bareHost(new URL(url));
  const family = isIP(host);
  if (family !== 0) {
    return THIS_MACHINE.check(host, family === 4 ? 'ipv4' : 'ipv6');
  }
  return host === 'localhost' || host === 'localhost.';
}

/** Same origin, and the entry's path at or under the target's base path. */
export function urlBelongsTo(entryUrl: string, baseUrl: string): boolean {
  let entry: URL;
  let base: URL;
  try {
    entry = new URL(entryUrl);
    base = new URL(baseUrl);
  } catch {
    return false;
  }
  const sameOrigin = entry.protocol === base.protocol && entry.host.toLowerCase() === base.host.toLowerCase();
  const basePath = base.pathname.replace(/\/+$/, '');
  return sameOrigin && (basePath === '' || entry.pathname === basePath || entry.pathname.startsWith(`${basePath}/`));
}

/** Whether a cloud-hosted chat app could reach this URL: https on a public name or address. */
export function isCloudReachable(url: string): boolean {
  const parsed = new URL(url);
  if (parsed.protocol !== 'https:' || isLoopbackUrl(url)) {
    return false;
  }
  const host = bareHost(parsed);
  // Not a loopback judgement: names under the reserved .localhost domain (RFC 6761) are never
  // published in public DNS, so a cloud app cannot reach them wherever they point locally.
  if (host === 'host.docker.internal' || host.endsWith('.localhost') || host.endsWith('.localhost.')) {
    return false;
  }
  if (isIP(host) === 4) {
    return !/^(10\.|192\.168\.|169\.254\.|172\.(1[6-9]|2\d|3[01])\.)/.test(host);
  }
  if (isIP(host) === 6) {
    return !/^(fc|fd|fe80)/.test(host);
  }
  return true;
}

/** The MCP endpoint of a service: its base URL plus the advertised path. */
export function mcpUrlOf(baseUrl: string, path: string | null): string {
  const mcpPath = path ? (path.startsWith('/') ? path : `/${path}`) : '/mcp';
  return `${baseUrl}${mcpPath}`;
}
