import { Terminal } from '@app/cli-terminal';
import {
  CliEnv,
  confirmDiscoveredUrl,
  describeSource,
  discoverOne,
  ENV_FILES,
  ServiceDescriptor,
  serviceUrlFromEnvFiles,
} from '@app/svc-client';

import { ServiceOptions } from './options';

/** Finds the one service a command works on, says where it came from, and applies the trust gate. */
export async function targetService(options: ServiceOptions, env: CliEnv, terminal: Terminal): Promise<ServiceDescriptor> {
  const descriptor = await discoverOne({ flagUrl: options.url, env, cwd: process.cwd() });
  // Trusted first: a URL the gate refuses is not announced as the one in use.
  await confirmDiscoveredUrl(descriptor, Boolean(options.yes), terminal);
  announce(descriptor, terminal);
  return descriptor;
}

/** The first line on stderr: which service, and why that one (a default port says what was missing). */
export function announce(descriptor: ServiceDescriptor, terminal: Terminal): void {
  if (descriptor.url_source === 'default') {
    const fromFile = serviceUrlFromEnvFiles(process.cwd());
    const why = fromFile
      ? `SERVICE_URL in ${fromFile.file} (${fromFile.url}) did not answer; found at a default port`
      : `no --url, SERVICE_URL, or SERVICE_URL in ${ENV_FILES.map((file) => `./${file}`).join(' or ')}; tried the default ports`;
    terminal.note(`Using ${descriptor.url} (${why}).`);
  } else if (descriptor.url_source !== 'flag') {
    const source = describeSource({ url: descriptor.url, source: descriptor.url_source, sourceFile: descriptor.url_source_file });
    terminal.note(`Using the service at ${descriptor.url} (from ${source}).`);
  }
}
