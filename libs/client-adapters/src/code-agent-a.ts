import { existsSync } from 'node:fs';
import { join } from 'node:path';

import { ClientContext } from './client-adapter';
import { readJsonObject } from './config-file';
import { onPath } from './detect';
import { authorizationHeader, bearerToken, JsonMcpClient } from './json-mcp-client';

/**
 * code-agent-a (Claude Code). User scope `~/.claude.json` → `mcpServers`; project scope `<cwd>/.mcp.json`;
 * a local-scope map (`~/.claude.json` → `projects["<cwd>"].mcpServers`) shadows both when reading.
 * Entry: `{"type":"http","url":…,"headers":{"Authorization":"Bearer …"}}`.
 */
export function codeAgentA(context: ClientContext): JsonMcpClient {
  const userFile = join(context.home, '.claude.json');
  const projectSource = { path: join(context.cwd, '.mcp.json'), keyPath: ['mcpServers'] };
  const userSource = { path: userFile, keyPath: ['mcpServers'] };
  return new JsonMcpClient({
    id: 'code-agent-a',
    sources: [{ path: userFile, keyPath: ['projects', context.cwd, 'mcpServers'] }, projectSource, userSource],
    userSource,
    projectSource,
    detect: () => existsSync(userFile) || onPath('claude', context.env),
    encode: (url, token) => ({ type: 'http', url, ...(token ? { headers: { Authorization: `Bearer ${token}` } } : {}) }),
    decode: (raw) => {
      const entry = raw as { url?: unknown; headers?: unknown };
      return entry && typeof entry.url === 'string' ? { url: entry.url, token: bearerToken(authorizationHeader(entry.headers)) } : null;
    },
    loginInstructions: (name) => [`Run: claude mcp login ${name}  (or /mcp -> Authenticate inside a session)`],
    projectTokenNote: '.mcp.json is project-scoped and often committed to version control; it now contains a token.',
    sourcesElsewhere: () =>
      otherProjects(userFile, context.cwd).map((project) => ({ path: userFile, keyPath: ['projects', project, 'mcpServers'] })),
  });
}

/** The other directories `~/.claude.json` keeps a local scope for (none when it cannot be read). */
function otherProjects(userFile: string, cwd: string): string[] {
  try {
    const projects = readJsonObject(userFile)?.projects;
    return projects && typeof projects === 'object' && !Array.isArray(projects) ? Object.keys(projects).filter((path) => path !== cwd) : [];
  } catch {
    return [];
  }
}
