import { CliError } from '@app/cli-terminal';

import { ClientAdapter, InPlaceClientId, McpEntry, TOKEN_PLACEHOLDER, WriteOutcome } from './client-adapter';
import { readJsonObject, refuseSymlink, writeFileAtomically } from './config-file';

/** Where a JSON client keeps MCP servers: a file and the key path of its server map in it. */
export interface JsonSource {
  path: string;
  keyPath: string[];
}

export interface JsonClientSpec {
  id: InPlaceClientId;
  /** Every source the client reads, highest precedence first. */
  sources: JsonSource[];
  userSource: JsonSource;
  /** Absent when the client has no project scope. */
  projectSource?: JsonSource;
  detect(): boolean;
  encode(url: string, token: string | null): Record<string, unknown>;
  decode(raw: unknown): { url: string; token: string | null } | null;
  loginInstructions(name: string): string[];
  /** Said when a token lands in a project-scoped file (often committed). */
  projectTokenNote?: string;
  /** Sources the client reads only when started in another directory. */
  sourcesElsewhere?(): JsonSource[];
}

export function bearerToken(header: unknown): string | null {
  if (typeof header !== 'string') {
    return null;
  }
  const match = /^\s*Bearer\s+(\S+)\s*$/i.exec(header);
  return match ? match[1] : null;
}

/** The Authorization header of a headers object, whatever its case. */
export function authorizationHeader(headers: unknown): unknown {
  if (!headers || typeof headers !== 'object') {
    return undefined;
  }
  const key = Object.keys(headers).find((name) => name.toLowerCase() === 'authorization');
  return key ? (headers as Record<string, unknown>)[key] : undefined;
}

function serverMap(document: Record<string, unknown> | null, keyPath: string[]): Record<string, unknown> | null {
  let node: unknown = document;
  for (const key of keyPath) {
    if (!node || typeof node !== 'object' || Array.isArray(node)) {
      return null;
    }
    node = (node as Record<string, unknown>)[key];
  }
  return node && typeof node === 'object' && !Array.isArray(node) ? (node as Record<string, unknown>) : null;
}

/**
 * A client whose config is JSON with a map of MCP servers (`mcpServers`). Writes change only the one
 * entry: every other key and server in the file is written back as it was read.
 */
export class JsonMcpClient implements ClientAdapter {
  readonly id: InPlaceClientId;
  readonly projectScope: boolean;

  constructor(private readonly spec: JsonClientSpec) {
    this.id = spec.id;
    this.projectScope = spec.projectSource !== undefined;
  }

  detect(): boolean {
    return this.spec.detect();
  }

  location(project: boolean): string {
    return this.target(project).path;
  }

  resolve(name: string): McpEntry | null {
    return this.entries().find((entry) => entry.name === name) ?? null;
  }

  entryIn(name: string, project: boolean): McpEntry | null {
    return this.entriesOf(this.target(project)).find((entry) => entry.name === name) ?? null;
  }

  entries(): McpEntry[] {
    return this.spec.sources.flatMap((source) => this.entriesOf(source));
  }

  entriesElsewhere(): McpEntry[] {
    return (this.spec.sourcesElsewhere?.() ?? []).flatMap((source) => this.entriesOf(source));
  }

  unreadable(): string[] {
    const paths = [...new Set(this.spec.sources.map((source) => source.path))];
    return paths.flatMap((path) => {
      try {
        readJsonObject(path);
        return [];
      } catch (error) {
        return [error instanceof Error ? error.message : String(error)];
      }
    });
  }

  private entriesOf(source: JsonSource): McpEntry[] {
    let document: Record<string, unknown> | null;
    try {
      document = readJsonObject(source.path);
    } catch {
      return []; // an unreadable file holds no entry the client could use either
    }
    return Object.entries(serverMap(document, source.keyPath) ?? {}).flatMap(([name, raw]) => {
      const decoded = this.spec.decode(raw);
      return decoded ? [{ name, ...decoded, location: source.path }] : [];
    });
  }

  write(name: string, url: string, token: string | null, project: boolean): WriteOutcome {
    const source = this.target(project);
    writeFileAtomically(source.path, `${JSON.stringify(this.edited(source, name, url, token), null, 2)}\n`, { secret: token !== null });
    const note = token !== null && source === this.spec.projectSource ? this.spec.projectTokenNote : undefined;
    return { location: source.path, ...(note ? { note } : {}) };
  }

  replaceToken(entry: McpEntry, token: string): void {
    // One file can hold several maps (code-agent-a's user and local scopes): the one holding this entry's token.
    for (const source of this.spec.sources.filter((candidate) => candidate.path === entry.location)) {
      const held = this.spec.decode(serverMap(readJsonObject(source.path), source.keyPath)?.[entry.name]);
      if (held && held.token === entry.token) {
        const document = this.edited(source, entry.name, held.url, token);
        writeFileAtomically(source.path, `${JSON.stringify(document, null, 2)}\n`, { secret: true });
      }
    }
  }

  check(name: string, url: string, project: boolean): void {
    const source = this.target(project);
    this.edited(source, name, url, TOKEN_PLACEHOLDER);
    refuseSymlink(source.path);
  }

  /** The source a write goes to (the user file for clients without a project scope). */
  private target(project: boolean): JsonSource {
    return project && this.spec.projectSource ? this.spec.projectSource : this.spec.userSource;
  }

  /** The source's config with the entry set, as a write would save it; nothing is written. */
  private edited(source: JsonSource, name: string, url: string, token: string | null): Record<string, unknown> {
    const document = readJsonObject(source.path) ?? {};
    let node: Record<string, unknown> = document;
    for (const key of source.keyPath) {
      const next = node[key] ?? {};
      if (typeof next !== 'object' || next === null || Array.isArray(next)) {
        throw new CliError(
          `Refusing to modify ${source.path}: "${source.keyPath.join('.')}" is not a JSON object.`,
          'Fix or move the file, then re-run.',
        );
      }
      node[key] = next;
      node = next as Record<string, unknown>;
    }
    node[name] = this.spec.encode(url, token);
    return document;
  }

  remove(name: string, location: string, url?: string): boolean {
    let removed = false;
    for (const source of this.spec.sources.filter((candidate) => candidate.path === location)) {
      const document = readJsonObject(source.path);
      const servers = serverMap(document, source.keyPath);
      if (document && servers && name in servers && (url === undefined || this.spec.decode(servers[name])?.url === url)) {
        delete servers[name];
        writeFileAtomically(source.path, `${JSON.stringify(document, null, 2)}\n`, { secret: false });
        removed = true;
      }
    }
    return removed;
  }

  loginInstructions(name: string): string[] {
    return this.spec.loginInstructions(name);
  }
}
