import { SERVICE_VERSION } from '@app/version';

import { CATALOG } from './catalog';

/** The documented two-letter short flag for --dry-run of up, down and restart; commander only knows one-letter short flags. */
const DRY_RUN_SHORT = '-dr';
const COMPOSE_COMMANDS = new Set(['up', 'down', 'restart']);

async function main(argv: string[]): Promise<void> {
  // The answers that need no command module are given before anything else loads; --help is the catalog
  // too, not commander's generic list.
  if (argv.length === 0 || (argv.length === 1 && (argv[0] === '--help' || argv[0] === '-h'))) {
    process.stdout.write(`${CATALOG}\n`);
    return;
  }
  if (argv.length === 1 && (argv[0] === '--version' || argv[0] === '-V')) {
    process.stdout.write(`${SERVICE_VERSION}\n`);
    return;
  }
  // Only where it is documented: elsewhere `-dr` stays what was typed, and commander names it if it is unknown.
  const args = COMPOSE_COMMANDS.has(argv[0]) ? argv.map((arg) => (arg === DRY_RUN_SHORT ? '--dry-run' : arg)) : argv;
  process.argv = [process.argv[0], process.argv[1], ...args];
  await import('reflect-metadata');
  const { CommandFactory } = await import('nest-commander');
  const { CliModule } = await import('./cli.module.js');
  await CommandFactory.run(CliModule, {
    logger: false,
    cliName: 'svc',
    version: SERVICE_VERSION,
    serviceErrorHandler: (error) => {
      process.stderr.write(`Error: ${error.message}\n`);
      process.exitCode = 1;
    },
  });
  // Keep-alive sockets and prompt handles must not hold the process open once the command is done.
  process.exit(process.exitCode ?? 0);
}

main(process.argv.slice(2)).catch((error: unknown) => {
  process.stderr.write(`Error: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
