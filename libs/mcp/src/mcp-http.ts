import { DEFAULT_SCOPES } from '@app/access';
import { Env, MCP_PATH, PROTECTED_RESOURCE_WELL_KNOWN } from '@app/config';

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
