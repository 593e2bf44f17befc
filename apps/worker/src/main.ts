// First: on a Node.js the service does not support, say so before a dependency fails to load.
import '@app/supported-node';
import 'reflect-metadata';

import { Worker } from 'node:worker_threads';

import { Logger } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';

import { bootLine, describeBootFailure, exitOnStopSignalsWhileBooting, loadEnv, SERVICE_VERSION } from '@app/config';
import { AppLogger, bootLogger } from '@app/logging';
import { deploymentComponents } from '@app/runs';

import { WorkerModule } from './worker.module';

/** How long past WORKER_SHUTDOWN_TIMEOUT_SECONDS a stop may take to hand back what it holds. */
const STOP_MARGIN_SECONDS = 5;
/** How long past that the process may take to exit at all. */
const EXIT_MARGIN_SECONDS = 2;

/**
 * Ends the process after `ms` even when its main thread is blocked, where no timer fires: its last log lines
 * written to an output nobody reads (a stalled log pipe) block the exit in the kernel or in pino's flush at exit.
 */
function killAfter(ms: number): void {
  new Worker(`setTimeout(() => process.kill(process.pid, 'SIGKILL'), ${ms});`, { eval: true }).unref();
}

async function main(): Promise<void> {
  const booted = exitOnStopSignalsWhileBooting('worker');
  const env = loadEnv();
  // Fail at boot, naming the variable, rather than at the first query.
  void env.databaseUrl;
  const app = await NestFactory.createApplicationContext(WorkerModule.forRoot(env, await deploymentComponents(env)), {
    // Until AppLogger takes over, Nest's lines (TypeORM's connection retries among them) go out as they happen,
    // in the same format: buffered, a pod retrying its database said nothing for half a minute, then everything
    // at once with one timestamp.
    bufferLogs: false,
    logger: bootLogger(env, 'worker'),
    // A failed boot reaches the one-line report below instead of process.abort() (SIGABRT, a core dump).
    abortOnError: false,
  });
  app.useLogger(app.get(AppLogger));
  const logger = new Logger('Worker');
  // Stays up until a signal even when no loop holds the event loop open (QUEUE_ENABLED=false).
  const keepAlive = setInterval(() => undefined, 60_000);
  // A clean stop (jobs drained or released) exits 0; a second signal during the drain is ignored.
  let stopping = false;
  const stop = (signal: NodeJS.Signals): void => {
    if (stopping) {
      return;
    }
    stopping = true;
    killAfter((env.WORKER_SHUTDOWN_TIMEOUT_SECONDS + STOP_MARGIN_SECONDS + EXIT_MARGIN_SECONDS) * 1000);
    clearInterval(keepAlive);
    logger.log({ signal }, 'worker stopping');
    // The drain has its deadline, but handing jobs back needs the database: one that stalls (no error, no
    // answer) would hold the stop until the orchestrator's SIGKILL. What is still held is swept after the lock grace.
    setTimeout(
      () => {
        logger.error({ signal }, `worker stop still waiting ${STOP_MARGIN_SECONDS} s after its deadline: exiting`);
        process.exit(1);
      },
      (env.WORKER_SHUTDOWN_TIMEOUT_SECONDS + STOP_MARGIN_SECONDS) * 1000,
    ).unref();
    app.close().then(
      () => process.exit(0),
      (error: unknown) => {
        logger.error({ err: error }, 'worker stopped with an error');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
  // A closed terminal or a supervisor's hang-up drains as a stop does, rather than killing the jobs it holds.
  process.on('SIGHUP', stop);
  booted();
  // The version says which release a worker runs during a rolling update.
  logger.log({ version: SERVICE_VERSION }, 'worker ready');
}

main().catch((error: unknown) => {
  // One line (what, why, what to do); the stack only at LOG_LEVEL=debug.
  console.error(bootLine('worker', describeBootFailure('worker', error)));
  process.exit(1);
});
