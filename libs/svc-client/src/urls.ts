import { isIP } from 'node:net';

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

/** localhost, 127.0.0.0/8, ::1 and the unspecified addresses: traffic that never leaves the machine. */
export function isLoopbackUrl(url: string): boolean {
  const host = bareHost(new URL(url));
  return host === 'localhost' || host.endsWith('.localhost') || /^127\./.test(host) || host === '::1' || host === '0.0.0.0' || host === '::';
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
  if (host === 'host.docker.internal') {
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
