import { basename } from 'node:path';

import { CliError, Terminal } from '@app/cli-terminal';

import { CliEnv } from './cli-env';
import { serviceUrlFromEnvFiles } from './env-file';
import { probeRequest } from './http';
import { normalizeBaseUrl, sameUrl } from './urls';

export type UrlSource = 'flag' | 'env' | 'env-file' | 'client-config' | 'default';
export type AuthMode = 'none' | 'security_key' | 'jwt' | 'unknown';

export interface Candidate {
  url: string;
  source: UrlSource;
  /** The env file name (env-file) or the clients whose configs named the URL (client-config). */
  sourceFile: string | null;
}

export interface McpOAuth {
  authorization_servers: string[] | null;
  resource: string | null;
}

/** The service descriptor, as printed under `os` in --json output. */
export interface ServiceDescriptor {
  url: string;
  name: string | null;
  os_id: string | null;
  version: string | null;
  mcp: { enabled: boolean; path: string | null; oauth: McpOAuth | null };
  auth_mode: AuthMode;
  discovered_via: 'info' | 'probe';
  url_source: UrlSource;
  url_source_file: string | null;
}

export const DEFAULT_PORTS = [7777, 7778, 7779, 8000] as const;
export const DEFAULT_URLS = DEFAULT_PORTS.map((port) => `http://localhost:${port}`);

export interface DiscoveryRequest {
  flagUrl?: string;
  env: CliEnv;
  cwd: string;
}

export function describeSource(candidate: Candidate): string {
  switch (candidate.source) {
    case 'flag':
      return '--url';
    case 'env':
      return 'SERVICE_URL';
    case 'env-file':
      return `SERVICE_URL in ${candidate.sourceFile}`;
    case 'client-config':
      return `client config (${candidate.sourceFile})`;
    default:
      return 'default';
  }
}

/**
 * Candidates grouped by priority: --url, else SERVICE_URL, else the env-file URL, then the localhost
 * defaults. An explicit URL (flag or exported variable) is the only candidate.
 */
export function candidateGroups(request: DiscoveryRequest): Candidate[][] {
  if (request.flagUrl !== undefined) {
    return [[{ url: normalizeBaseUrl(request.flagUrl, '--url'), source: 'flag', sourceFile: null }]];
  }
  if (request.env.serviceUrl) {
    return [[{ url: normalizeBaseUrl(request.env.serviceUrl, 'SERVICE_URL'), source: 'env', sourceFile: null }]];
  }
  const groups: Candidate[][] = [];
  const fromFile = serviceUrlFromEnvFiles(request.cwd);
  if (fromFile) {
    groups.push([{ url: normalizeBaseUrl(fromFile.url, fromFile.file), source: 'env-file', sourceFile: fromFile.file }]);
  }
  groups.push(DEFAULT_URLS.map((url) => ({ url, source: 'default' as const, sourceFile: null })));
  return groups;
}

function authModeFromConfigProbe(status: number, detail: unknown): AuthMode {
  if (status === 200) {
    return 'none';
  }
  if (status === 401) {
    return typeof detail === 'string' && detail.toLowerCase().includes('required') ? 'security_key' : 'jwt';
  }
  return 'unknown';
}

function text(value: unknown): string | null {
  return typeof value === 'string' ? value : null;
}

/** A candidate nothing was found at, and why: what the operator reads when no service is found. */
export interface Miss {
  candidate: Candidate;
  reason: string;
}

/** GET /health then GET /info; servers without structured discovery are probed via POST /mcp and GET /config. */
async function probe(candidate: Candidate): Promise<ServiceDescriptor | Miss> {
  let health: Awaited<ReturnType<typeof probeRequest>>;
  try {
    health = await probeRequest('GET', `${candidate.url}/health`);
  } catch (error) {
    // "Could not reach <url>: <why>": the why (refused, a TLS failure, no answer within the timeout).
    return { candidate, reason: (error as Error).message.replace(/^Could not reach \S+: /, '') };
  }
  if (health.status !== 200 || health.body === null) {
    return { candidate, reason: `GET /health answered ${health.status}${health.body === null ? ', not JSON' : ''}: not this service` };
  }
  const info = await probeRequest('GET', `${candidate.url}/info`).catch(() => null);
  const body: Record<string, unknown> = info?.status === 200 && info.body ? info.body : {};
  const base = {
    url: candidate.url,
    name: text(body.name),
    os_id: text(body.os_id),
    version: text(body.version),
    url_source: candidate.source,
    url_source_file: candidate.sourceFile,
  };
  const mcp = body.mcp && typeof body.mcp === 'object' ? (body.mcp as Record<string, unknown>) : null;
  if (mcp && typeof body.auth_mode === 'string') {
    const oauth = mcp.oauth && typeof mcp.oauth === 'object' ? (mcp.oauth as McpOAuth) : null;
    const authMode = (['none', 'security_key', 'jwt'] as const).find((mode) => mode === body.auth_mode) ?? 'unknown';
    return {
      ...base,
      mcp: { enabled: Boolean(mcp.enabled), path: text(mcp.path), oauth },
      auth_mode: authMode,
      discovered_via: 'info',
    };
  }
  const mcpProbe = await probeRequest('POST', `${candidate.url}/mcp`, { jsonrpc: '2.0', id: 0, method: 'ping' }).catch(() => null);
  const configProbe = await probeRequest('GET', `${candidate.url}/config`).catch(() => null);
  const mcpEnabled = mcpProbe !== null && mcpProbe.status !== 404;
  return {
    ...base,
    mcp: { enabled: mcpEnabled, path: mcpEnabled ? '/mcp' : null, oauth: null },
    auth_mode: configProbe ? authModeFromConfigProbe(configProbe.status, configProbe.body?.detail) : 'unknown',
    discovered_via: 'probe',
  };
}

const MCP_ENDPOINT = /\/mcp\/?$/;

const isMiss = (found: ServiceDescriptor | Miss): found is Miss => 'reason' in found;

/** What to check next, by where the URL that failed came from. */
function nextStep({ candidate }: Miss): string {
  switch (candidate.source) {
    case 'flag':
      return 'Check the URL and that the service runs there (npm start).';
    case 'env':
      return 'Check SERVICE_URL in the environment, or pass --url.';
    case 'env-file':
      // npm start writes .env's SERVICE_URL at each start: one that no longer answers is most often a stopped npm start.
      return basename(candidate.sourceFile ?? '') === '.env'
        ? `Is the service running? Start it (npm start), or check SERVICE_URL in ${candidate.sourceFile}, or pass --url.`
        : `Check SERVICE_URL in ${candidate.sourceFile}, or pass --url.`;
    default:
      return 'Start it (npm start), or pass --url or set SERVICE_URL.';
  }
}

function nothingFound(misses: Miss[]): CliError {
  const list = misses.map(({ candidate, reason }) => `${candidate.url} (from ${describeSource(candidate)}): ${reason}`).join('; ');
  // The URL `npm start` prints beside "MCP:" is the likeliest paste: the service lives one level up.
  const endpoint = misses.find(({ candidate }) => MCP_ENDPOINT.test(candidate.url));
  const hint = endpoint
    ? `${endpoint.candidate.url} is the MCP endpoint; svc wants the service's base URL: ${endpoint.candidate.url.replace(MCP_ENDPOINT, '')}`
    : nextStep(misses[0]);
  return new CliError(`No running service found (tried: ${list}).`, hint);
}

/**
 * One target, for scripts and for commands that need exactly one: only the highest-priority source is
 * probed (an env-file URL hides the localhost defaults), and within it the first live candidate wins.
 */
export async function discoverOne(request: DiscoveryRequest): Promise<ServiceDescriptor> {
  const [group] = candidateGroups(request);
  const misses: Miss[] = [];
  for (const candidate of group) {
    const found = await probe(candidate);
    if (!isMiss(found)) {
      return found;
    }
    misses.push(found);
  }
  throw nothingFound(misses);
}

/**
 * Interactive connect/disconnect: every candidate (env file, localhost defaults, URLs in existing client
 * configs) is probed; when several answer the operator picks one. Explicit URLs are used as they are.
 */
export async function discoverInteractively(
  request: DiscoveryRequest,
  fromClientConfigs: Candidate[],
  terminal: Terminal,
): Promise<ServiceDescriptor> {
  const groups = candidateGroups(request);
  const explicit = groups[0][0].source === 'flag' || groups[0][0].source === 'env';
  if (explicit || !terminal.interactive) {
    return discoverOne(request);
  }
  const candidates: Candidate[] = [];
  for (const candidate of [...groups.flat(), ...fromClientConfigs]) {
    if (!candidates.some((known) => sameUrl(known.url, candidate.url))) {
      candidates.push(candidate);
    }
  }
  const probed = await Promise.all(candidates.map((candidate) => probe(candidate)));
  const found = probed.filter((item): item is ServiceDescriptor => !isMiss(item));
  const envFileCandidate = candidates.find((candidate) => candidate.source === 'env-file');
  if (envFileCandidate && !found.some((descriptor) => descriptor.url_source === 'env-file')) {
    terminal.note(`Nothing answered at ${envFileCandidate.url} (${describeSource(envFileCandidate)}).`);
  }
  if (found.length === 0) {
    throw nothingFound(probed.filter(isMiss));
  }
  if (found.length === 1) {
    return found[0];
  }
  return terminal.select(
    'Several services answered. Which one?',
    found.map((descriptor) => ({
      name: `${descriptor.url}  ${descriptor.name ?? ''} (${describeSource({ url: descriptor.url, source: descriptor.url_source, sourceFile: descriptor.url_source_file })})`,
      value: descriptor,
    })),
  );
}

/** True when /mcp is OAuth-protected: an oauth block naming at least one authorization server. */
export function oauthEnabled(descriptor: ServiceDescriptor): boolean {
  return Boolean(descriptor.mcp.oauth?.authorization_servers?.length);
}
