import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';

import { ClientContext } from './client-adapter';
import { onPath } from './detect';
import { authorizationHeader, bearerToken, JsonMcpClient } from './json-mcp-client';

/** The env entry that carries the bearer header to the stdio bridge, so the token never sits in argv. */
export const AUTH_HEADER_ENV = 'SVC_AUTH_HEADER';

/** desktop-app-a (Claude Desktop) keeps its config in the per-OS application-support directory. */
export function desktopConfigPath(context: ClientContext): string {
  if (context.platform === 'darwin') {
    return join(context.home, 'Library', 'Application Support', 'Claude', 'claude_desktop_config.json');
  }
  if (context.platform === 'win32') {
    return join(context.env.APPDATA ?? join(context.home, 'AppData', 'Roaming'), 'Claude', 'claude_desktop_config.json');
  }
  return join(context.env.XDG_CONFIG_HOME ?? join(context.home, '.config'), 'Claude', 'claude_desktop_config.json');
}

/**
 * desktop-app-a speaks only stdio to local servers, so the entry launches the `mcp-remote` bridge via npx:
 * `{"command":"npx","args":["-y","mcp-remote",<url>,"--header","Authorization:${SVC_AUTH_HEADER}"],
 * "env":{"SVC_AUTH_HEADER":"Bearer …"}}`. No project scope.
 */
export function desktopAppA(context: ClientContext): JsonMcpClient {
  const source = { path: desktopConfigPath(context), keyPath: ['mcpServers'] };
  return new JsonMcpClient({
    id: 'desktop-app-a',
    sources: [source],
    userSource: source,
    detect: () => existsSync(source.path) || existsSync(dirname(source.path)),
    encode: (url, token) =>
      token
        ? {
            command: 'npx',
            args: ['-y', 'mcp-remote', url, '--header', `Authorization:\${${AUTH_HEADER_ENV}}`],
            env: { [AUTH_HEADER_ENV]: `Bearer ${token}` },
          }
        : { command: 'npx', args: ['-y', 'mcp-remote', url] },
    decode: (raw) => {
      const entry = raw as { url?: unknown; headers?: unknown; args?: unknown; env?: Record<string, unknown> };
      if (entry && typeof entry.url === 'string') {
        return { url: entry.url, token: bearerToken(authorizationHeader(entry.headers)) };
      }
      if (!entry || !Array.isArray(entry.args)) {
        return null;
      }
      const args = entry.args.map(String);
      const bridge = args.indexOf('mcp-remote');
      if (bridge < 0 || bridge + 1 >= args.length) {
        return null;
      }
      return { url: args[bridge + 1], token: bearerToken(entry.env?.[AUTH_HEADER_ENV]) };
    },
    loginInstructions: () => ['Restart Claude Desktop; mcp-remote opens the browser sign-in automatically'],
  });
}

/** The bridge needs npx; a missing npx is worth a note, not a failure. */
export function npxNote(context: ClientContext): string | null {
  return onPath('npx', context.env) ? null : 'npx was not found on PATH: install Node.js (npx) or desktop-app-a cannot start the bridge.';
}
