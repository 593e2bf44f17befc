/** In-place clients: svc writes their config files. */
export const IN_PLACE_CLIENTS = ['code-agent-a', 'desktop-app-a', 'code-agent-b', 'editor-c'] as const;
/** Chat apps reach MCP servers from their own cloud: svc prints manual steps for them. */
export const CHAT_APP_CLIENTS = ['chat-app-a', 'chat-app-b'] as const;

export type InPlaceClientId = (typeof IN_PLACE_CLIENTS)[number];
export type ChatAppClientId = (typeof CHAT_APP_CLIENTS)[number];
export type ClientId = InPlaceClientId | ChatAppClientId;

/** The real product behind each canonical client id, shown beside the id in output. */
export const CLIENT_PRODUCTS: Readonly<Record<ClientId, string>> = {
  'code-agent-a': 'Claude Code',
  'desktop-app-a': 'Claude Desktop',
  'code-agent-b': 'Codex',
  'editor-c': 'Cursor',
  'chat-app-a': 'ChatGPT',
  'chat-app-b': 'Claude web',
};

/** `code-agent-a (Claude Code)`: the canonical id a flag takes, and the product a person knows. */
export function clientLabel(client: ClientId): string {
  return `${client} (${CLIENT_PRODUCTS[client]})`;
}

export interface ClientContext {
  home: string;
  cwd: string;
  platform: NodeJS.Platform;
  env: NodeJS.ProcessEnv;
}

/** One MCP server entry found in a client config. */
export interface McpEntry {
  name: string;
  url: string;
  token: string | null;
  /** The file holding it. */
  location: string;
}

/** Stands in for the token a check cannot know yet: any token's shape edits a config the same way. */
export const TOKEN_PLACEHOLDER = 'svc_pat_0000000000000000000000000000000000000000000';

export interface WriteOutcome {
  location: string;
  note?: string;
}

export interface ClientAdapter {
  readonly id: InPlaceClientId;
  /** Whether the client reads a project-scoped config (`--project`); code-agent-b and desktop-app-a do not. */
  readonly projectScope: boolean;
  /** Whether the client is installed on this machine. */
  detect(): boolean;
  /** The file a write goes to (the user file for clients without a project scope). */
  location(project: boolean): string;
  /** The entry of that name as the client resolves it (the higher-precedence scope wins). */
  resolve(name: string): McpEntry | null;
  /** The entry of that name in the scope a write goes to (`location(project)`), whatever shadows it. */
  entryIn(name: string, project: boolean): McpEntry | null;
  /**
   * Every entry in every scope the client reads. Never throws: a file that cannot be read or does not parse holds
   * none the client could use (`unreadable()` says why).
   */
  entries(): McpEntry[];
  /**
   * Entries the client reads only when started elsewhere (code-agent-a's other projects' local scopes): never
   * edited from here, but a token in one is in use.
   */
  entriesElsewhere(): McpEntry[];
  /** Why each of the client's config files that exists does not parse: whether it holds an entry is unknown. */
  unreadable(): string[];
  write(name: string, url: string, token: string | null, project: boolean): WriteOutcome;
  /** Writes `token` into one entry `entries()` found, in its own file and map, keeping its name and URL. */
  replaceToken(entry: McpEntry, token: string): void;
  /**
   * Throws what `write` would throw for this entry (a file that does not parse, a layout it cannot edit, a
   * symbolic link), writing nothing: checked before a token is minted or rotated for the client, so a
   * refused write never leaves a new token that nobody holds.
   */
  check(name: string, url: string, project: boolean): void;
  /**
   * Removes the entry of that name from one file; false when it was not there. With `url`, only an entry
   * pointing at exactly that URL goes: one file can hold several maps (code-agent-a's user and local
   * scopes in ~/.claude.json), and a same-named entry in another map may point at another server.
   */
  remove(name: string, location: string, url?: string): boolean;
  /** What the operator does to finish a pending OAuth sign-in. */
  loginInstructions(name: string): string[];
}
