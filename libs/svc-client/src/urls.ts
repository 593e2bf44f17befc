import { isIP } from 'node:net';

import { CliError } from '@app/cli-terminal';
import { isLoopbackHost } from '@app/loopback';

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
 * Whether a request to this URL stays on this machine, so that a credential may go over plaintext
 * http:// and a URL from a file needs no prompt: the one loopback rule, isLoopbackHost, applied to
 * the host as the WHATWG URL parser gives it (`http://0x7f.1` is `127.0.0.1`; `127.evil.example` is
 * a name and not loopback).
 */
export function isLoopbackUrl(url: string): boolean {
  return isLoopbackHost(new URL(url).hostname);
}

/**
 * Same scheme, host and port, where two loopback hosts (isLoopbackHost: localhost, 127.0.0.1, [::1]…) on one port
 * are one service: `npm start` writes http://127.0.0.1:7777, the CLI's default candidates and many a hand-written
 * URL say localhost.
 */
function sameOrigin(a: URL, b: URL): boolean {
  if (a.protocol !== b.protocol) {
    return false;
  }
  return a.host === b.host || (a.port === b.port && isLoopbackHost(a.hostname) && isLoopbackHost(b.hostname));
}

/** The same URL, however this machine's name is spelt in it (see sameOrigin). */
export function sameUrl(a: string, b: string): boolean {
  if (a === b) {
    return true;
  }
  try {
    const [left, right] = [new URL(a), new URL(b)];
    return sameOrigin(left, right) && left.pathname === right.pathname && left.search === right.search;
  } catch {
    return false;
  }
}

/** The same origin (see sameOrigin), and the entry's path at or under the target's base path. */
export function urlBelongsTo(entryUrl: string, baseUrl: string): boolean {
  let entry: URL;
  let base: URL;
  try {
    entry = new URL(entryUrl);
    base = new URL(baseUrl);
  } catch {
    return false;
  }
  const basePath = base.pathname.replace(/\/+$/, '');
  return sameOrigin(entry, base) && (basePath === '' || entry.pathname === basePath || entry.pathname.startsWith(`${basePath}/`));
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
