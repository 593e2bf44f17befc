import { SERVICE_VERSION } from '@app/config';

import { CATALOG } from './catalog';

async function main(argv: string[]): Promise<void> {
  // The two answers that need no command module are given before Nest boots.
  if (argv.length === 0) {
    process.stdout.write(`${CATALOG}\n`);
    return;
  }
  if (argv.length === 1 && (argv[0] === '--version' || argv[0] === '-V')) {
    process.stdout.write(`${SERVICE_VERSION}\n`);
    return;
  }
  await import('reflect-metadata');
  const { CommandFactory } = await import('nest-commander');
  const { CliModule } = await import('./cli.module.js');
  await CommandFactory.run(CliModule, {
    logger: false,
    errorHandler: (error) => {
      process.stderr.write(`${error.message}\n`);
      process.exit(2);
    },
    serviceErrorHandler: (error) => {
      process.stderr.write(`${error.message}\n`);
      process.exit(1);
    },
  });
}

void main(process.argv.slice(2));
