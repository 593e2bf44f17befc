import { DEFAULT_SCOPES } from '@app/access';
import { Env, isLoopbackHost, MCP_PATH, PROTECTED_RESOURCE_WELL_KNOWN } from '@app/config';

/** RFC 9728 metadata: which authorization server issues tokens for /mcp. */
export interface ProtectedResourceMetadata {
  resource: string;
  authorization_servers: string[];
  bearer_methods_supported: string[];
  scopes_supported: string[];
  resource_name: string;
}

/** The `mcp.oauth` block of /info: null unless /mcp is an OAuth-protected resource. */
export function mcpOAuthInfo(env: Env): { authorization_servers: string[]; resource: string } | null {
  return env.mcpOAuthConfigured ? { authorization_servers: [env.MCP_OAUTH_ISSUER!], resource: env.mcpResourceUrl } : null;
}

export function protectedResourceMetadata(env: Env): ProtectedResourceMetadata | null {
  const oauth = mcpOAuthInfo(env);
  // A client asks the authorization server for these; they are the defaults a service account gets.
  return oauth && { ...oauth, bearer_methods_supported: ['header'], scopes_supported: DEFAULT_SCOPES, resource_name: env.OS_NAME };
}

/** Where RFC 9728 puts the metadata of the resource at MCP_PATH, plus the root alias older clients try. */
export const PROTECTED_RESOURCE_PATHS = [`${PROTECTED_RESOURCE_WELL_KNOWN}${MCP_PATH}`, PROTECTED_RESOURCE_WELL_KNOWN];

/**
 * DNS-rebinding defence the MCP transport spec requires: a request carrying a browser Origin is
 * served only when that origin is this service's public origin or a loopback one (isLoopbackHost:
 * a page a rebinding attacker serves has its own name as origin, and no name passes by its prefix).
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
