import { homedir } from 'node:os';

import { CliError } from '@app/cli-terminal';

import {
  CHAT_APP_CLIENTS,
  ChatAppClientId,
  CLIENT_PRODUCTS,
  ClientAdapter,
  ClientContext,
  ClientId,
  IN_PLACE_CLIENTS,
  InPlaceClientId,
} from './client-adapter';
import { codeAgentA } from './code-agent-a';
import { CodeAgentB } from './code-agent-b';
import { desktopAppA } from './desktop-app-a';
import { editorC } from './editor-c';

/** Other names accepted by --clients: the real products' names. */
export const CLIENT_ALIASES: Record<string, ClientId> = {
  claude: 'code-agent-a',
  'claude-code': 'code-agent-a',
  'claude-desktop': 'desktop-app-a',
  'claude-app': 'desktop-app-a',
  codex: 'code-agent-b',
  cursor: 'editor-c',
  chatgpt: 'chat-app-a',
  'claude-ai': 'chat-app-b',
  claudeai: 'chat-app-b',
  'claude.ai': 'chat-app-b',
};

const ALL_CLIENTS: readonly ClientId[] = [...IN_PLACE_CLIENTS, ...CHAT_APP_CLIENTS];

export function isChatApp(client: ClientId): client is ChatAppClientId {
  return (CHAT_APP_CLIENTS as readonly string[]).includes(client);
}

/** `--clients a,b`: identifiers or aliases, case-insensitive; duplicates collapse, order is kept. */
/** Every client for a person choosing one: its id, the product, and the other names --clients takes for it. */
export function describeClients(): string {
  return ALL_CLIENTS.map((client) => {
    const aliases = Object.keys(CLIENT_ALIASES).filter((alias) => CLIENT_ALIASES[alias] === client);
    return `${client} (${CLIENT_PRODUCTS[client]}${aliases.length ? `; also ${aliases.join(', ')}` : ''})`;
  }).join(', ');
}

export function parseClientList(value: string): ClientId[] {
  const selected: ClientId[] = [];
  for (const raw of value
    .split(',')
    .map((item) => item.trim().toLowerCase())
    .filter(Boolean)) {
    // The table's own aliases only: `constructor` is no client.
    const alias = Object.hasOwn(CLIENT_ALIASES, raw) ? CLIENT_ALIASES[raw] : undefined;
    const client = (ALL_CLIENTS as readonly string[]).includes(raw) ? (raw as ClientId) : alias;
    if (!client) {
      throw new CliError(`Unknown client: ${raw}`, `Supported: ${describeClients()}.`);
    }
    if (!selected.includes(client)) {
      selected.push(client);
    }
  }
  if (selected.length === 0) {
    throw new CliError('--clients needs at least one client.', `Supported: ${ALL_CLIENTS.join(', ')}.`);
  }
  return selected;
}

export function clientContext(cwd = process.cwd()): ClientContext {
  return { home: homedir(), cwd, platform: process.platform, env: process.env };
}

/** The four in-place adapters, in catalog order. */
export function createAdapters(context: ClientContext): Record<InPlaceClientId, ClientAdapter> {
  return {
    'code-agent-a': codeAgentA(context),
    'desktop-app-a': desktopAppA(context),
    'code-agent-b': new CodeAgentB(context),
    'editor-c': editorC(context),
  };
}
