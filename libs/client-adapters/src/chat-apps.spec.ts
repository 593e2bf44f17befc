import { describe, expect, it } from 'vitest';

import { chatAppSetupSteps } from './chat-apps';

describe('chatAppSetupSteps', () => {
  it('says to paste the MCP URL shown only when the app can reach the service and sign in to it', () => {
    const [, signIn, add] = chatAppSetupSteps('chat-app-a', 'oauth', true);
    expect(signIn).toBe('This service supports OAuth sign-in on /mcp; ChatGPT asks you to authorize when you add the connector.');
    expect(add).toBe(
      'In ChatGPT: Settings -> Connectors -> Add custom connector, paste the MCP URL below, and follow the prompts ' +
        '(custom connectors need a paid plan; enable Developer Mode for full tool access).',
    );
  });

  it('an instance without authentication needs no sign-in, and says anyone who reaches it can use it', () => {
    const [, signIn, add] = chatAppSetupSteps('chat-app-b', 'open', true);
    expect(signIn).toBe('This service asks no credential on /mcp, so Claude needs none; anyone who can reach its URL can use it too.');
    expect(add).toMatch(
      /^In claude\.ai or the Claude desktop app: Settings -> Connectors -> Add custom connector, paste the MCP URL below, /,
    );
  });

  it('names what must come first, in order, rather than a URL the app cannot use', () => {
    expect(chatAppSetupSteps('chat-app-b', 'oauth', false)[2]).toMatch(
      /^Once the service is on a public HTTPS URL, in claude\.ai or the Claude desktop app: .+ paste its public MCP URL \(https:\/\/<public host>\/mcp; the one below is local\), /,
    );
    expect(chatAppSetupSteps('chat-app-a', 'token', true)[2]).toMatch(
      /^Once it offers OAuth sign-in on \/mcp, in ChatGPT: .+ paste the MCP URL below, /,
    );
    expect(chatAppSetupSteps('chat-app-a', 'token', false)[2]).toMatch(
      /^Once the service is on a public HTTPS URL and it offers OAuth sign-in on \/mcp, in ChatGPT: /,
    );
  });
});
