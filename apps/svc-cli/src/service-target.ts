import { Terminal } from '@app/cli-terminal';
import { CliEnv, confirmDiscoveredUrl, describeSource, discoverOne, ServiceDescriptor } from '@app/svc-client';

import { ServiceOptions } from './options';

/** Finds the one service a command works on, says where it came from, and applies the trust gate. */
export async function targetService(options: ServiceOptions, env: CliEnv, terminal: Terminal): Promise<ServiceDescriptor> {
  const descriptor = await discoverOne({ flagUrl: options.url, env, cwd: process.cwd() });
  announce(descriptor, terminal);
  await confirmDiscoveredUrl(descriptor, Boolean(options.yes), terminal);
  return descriptor;
}

export function announce(descriptor: ServiceDescriptor, terminal: Terminal): void {
  if (descriptor.url_source !== 'flag') {
    const source = describeSource({ url: descriptor.url, source: descriptor.url_source, sourceFile: descriptor.url_source_file });
    terminal.note(`Using the service at ${descriptor.url} (from ${source}).`);
  }
}
