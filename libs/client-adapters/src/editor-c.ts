import { existsSync, statSync } from 'node:fs';
import { join } from 'node:path';

import { ClientContext } from './client-adapter';
import { authorizationHeader, bearerToken, JsonMcpClient } from './json-mcp-client';

/**
 * editor-c (Cursor). User scope `~/.cursor/mcp.json`, project scope `<cwd>/.cursor/mcp.json` (wins when
 * reading). Entry: `{"url":…,"headers":{"Authorization":"Bearer …"}}`.
 */
export function editorC(context: ClientContext): JsonMcpClient {
  const userSource = { path: join(context.home, '.cursor', 'mcp.json'), keyPath: ['mcpServers'] };
  const projectSource = { path: join(context.cwd, '.cursor', 'mcp.json'), keyPath: ['mcpServers'] };
  const userDir = join(context.home, '.cursor');
  return new JsonMcpClient({
    id: 'editor-c',
    sources: projectSource.path === userSource.path ? [userSource] : [projectSource, userSource],
    userSource,
    projectSource,
    detect: () => existsSync(userDir) && statSync(userDir).isDirectory(),
    encode: (url, token) => ({ url, ...(token ? { headers: { Authorization: `Bearer ${token}` } } : {}) }),
    decode: (raw) => {
      const entry = raw as { url?: unknown; headers?: unknown };
      return entry && typeof entry.url === 'string' ? { url: entry.url, token: bearerToken(authorizationHeader(entry.headers)) } : null;
    },
    loginInstructions: (name) => [`Open Cursor Settings -> MCP and click Connect on '${name}'`],
    projectTokenNote: '.cursor/mcp.json now contains a token; keep it out of version control.',
  });
}
