import { Command, Option } from 'nest-commander';

import { Terminal } from '@app/cli-terminal';
import { clientContext, clientLabel, createAdapters } from '@app/client-adapters';
import { discoverOne, mcpUrlOf, readCliEnv, urlBelongsTo } from '@app/svc-client';

import { ServiceOptions } from '../options';
import { parseServerNameOption, serverNameFor } from '../server-name';
import { announce } from '../service-target';
import { ServiceCommand } from '../svc-command';

interface StatusOptions extends ServiceOptions {
  serverName?: string;
}

/** The service found, and for each in-place client whether it is installed and has this service's entry. */
@Command({ name: 'status', description: 'Show the service and which clients are configured' })
export class StatusCommand extends ServiceCommand<StatusOptions> {
  protected async execute(_params: string[], options: StatusOptions, terminal: Terminal): Promise<number> {
    const descriptor = await discoverOne({ flagUrl: options.url, env: readCliEnv(), cwd: process.cwd() });
    announce(descriptor, terminal);
    const serverName = serverNameFor(options.serverName, descriptor.name);
    const mcpUrl = mcpUrlOf(descriptor.url, descriptor.mcp.path);
    const clients = Object.values(createAdapters(clientContext())).map((adapter) => {
      const entry = adapter.resolve(serverName);
      const configured = entry !== null && urlBelongsTo(entry.url, descriptor.url);
      return { client: adapter.id, detected: adapter.detect(), configured, location: configured ? entry.location : null };
    });
    terminal.document({ os: descriptor, clients });
    const { color } = terminal;
    terminal.line(`${color.bold(descriptor.name ?? 'Service')} ${descriptor.version ?? ''} at ${descriptor.url}`);
    terminal.line(`  auth mode: ${descriptor.auth_mode}`);
    terminal.line(`  MCP:       ${descriptor.mcp.enabled ? `${mcpUrl}${descriptor.mcp.oauth ? ' (OAuth)' : ''}` : 'not enabled'}`);
    terminal.line(`Clients (entry '${serverName}'):`);
    for (const client of clients) {
      const state = client.configured
        ? color.green(`configured in ${client.location}`)
        : client.detected
          ? 'detected, not configured'
          : color.dim('not detected');
      terminal.line(`  ${clientLabel(client.client).padEnd(31)} ${state}`);
    }
    if (clients.some((client) => client.configured)) {
      // Read from the clients' files, not tried: a revoked or expired token still reads as configured here.
      terminal.note(
        'Entries are read from the config files, not tried: svc connect verifies each over MCP and gives one whose token stopped working a new token (rotating an existing account takes --rotate, or a yes at a terminal).',
      );
    }
    return 0;
  }

  @Option({ flags: '--server-name <name>', description: 'MCP entry name (default: derived from the service name)' })
  parseServerName(value: string): string {
    return parseServerNameOption(value);
  }
}
