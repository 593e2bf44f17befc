import { ChatAppClientId } from './client-adapter';

const APP_NAMES: Record<ChatAppClientId, string> = { 'chat-app-a': 'ChatGPT', 'chat-app-b': 'Claude' };

/** How the app can get in: OAuth sign-in on /mcp, no credential at all, or only with a bearer token (which it cannot send). */
export type ChatAppAccess = 'oauth' | 'open' | 'token';

/**
 * Chat apps add connectors from their own cloud: the steps an operator follows in the app's UI. Where the service
 * is not on a public URL yet (`reachable` false) or takes only a token the app cannot send, the last step says
 * what must come first rather than to paste a URL the app cannot use.
 */
export function chatAppSetupSteps(client: ChatAppClientId, access: ChatAppAccess, reachable: boolean): string[] {
  const app = APP_NAMES[client];
  const signIn = {
    oauth: `This service supports OAuth sign-in on /mcp; ${app} asks you to authorize when you add the connector.`,
    open: `This service asks no credential on /mcp, so ${app} needs none; anyone who can reach its URL can use it too.`,
    token: `${app}'s Connectors UI authenticates with OAuth, not bearer tokens, so a token-protected service cannot be added from the UI; use a public or OAuth-enabled service.`,
  }[access];
  const first = [
    reachable ? null : 'the service is on a public HTTPS URL',
    access === 'token' ? 'it offers OAuth sign-in on /mcp' : null,
  ].filter(Boolean);
  const where = client === 'chat-app-b' ? 'in claude.ai or the Claude desktop app' : 'in ChatGPT';
  const plan =
    client === 'chat-app-b'
      ? 'custom connectors need a paid plan'
      : 'custom connectors need a paid plan; enable Developer Mode for full tool access';
  const url = reachable ? 'paste the MCP URL below' : 'paste its public MCP URL (https://<public host>/mcp; the one below is local)';
  const when = first.length > 0 ? `Once ${first.join(' and ')}, ${where}` : `${where[0].toUpperCase()}${where.slice(1)}`;
  return [
    `${app} reaches MCP servers from its cloud, so the service must be on a public HTTPS URL.`,
    signIn,
    `${when}: Settings -> Connectors -> Add custom connector, ${url}, and follow the prompts (${plan}).`,
  ];
}

export function chatAppUnreachableNote(client: ChatAppClientId, url: string): string {
  return `${APP_NAMES[client]} adds connectors from its own cloud and cannot reach a local service at ${url}; deploy it behind a public HTTPS URL (or a tunnel) before adding it.`;
}

export function chatAppRemovalSteps(client: ChatAppClientId): string[] {
  return [`Remove the connector in the ${APP_NAMES[client]} UI: Settings -> Connectors.`];
}
