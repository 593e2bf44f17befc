import { ChatAppClientId } from './client-adapter';

const APP_NAMES: Record<ChatAppClientId, string> = { 'chat-app-a': 'ChatGPT', 'chat-app-b': 'Claude' };

/** Chat apps add connectors from their own cloud: the steps an operator follows in the app's UI. */
export function chatAppSetupSteps(client: ChatAppClientId, oauth: boolean): string[] {
  const app = APP_NAMES[client];
  const access = oauth
    ? `This service supports OAuth sign-in on /mcp; ${app} asks you to authorize when you add the connector.`
    : `${app}'s Connectors UI authenticates with OAuth, not bearer tokens, so a token-protected service cannot be added from the UI; use a public or OAuth-enabled service.`;
  const where =
    client === 'chat-app-b'
      ? 'In claude.ai or the Claude desktop app: Settings -> Connectors -> Add custom connector, paste the MCP URL below, and follow the prompts (custom connectors need a paid plan).'
      : 'In ChatGPT: Settings -> Connectors -> Add custom connector, paste the MCP URL below, and follow the prompts (custom connectors need a paid plan; enable Developer Mode for full tool access).';
  return [`${app} reaches MCP servers from its cloud, so the service must be on a public HTTPS URL.`, access, where];
}

export function chatAppUnreachableNote(client: ChatAppClientId, url: string): string {
  return `${APP_NAMES[client]} adds connectors from its own cloud and cannot reach a local service at ${url}; deploy it behind a public HTTPS URL (or a tunnel) before adding it.`;
}

export function chatAppRemovalSteps(client: ChatAppClientId): string[] {
  return [`Remove the connector in the ${APP_NAMES[client]} UI: Settings -> Connectors.`];
}
