import { constants } from 'node:os';

import { bootLine } from './boot-error';

const STOP_SIGNALS: NodeJS.Signals[] = ['SIGTERM', 'SIGINT', 'SIGHUP'];

/**
 * Until the app has its own stop, a stop signal ends the process at once with the status the signal's default
 * action gives (128 + its number). Installed first thing in main: in a container node is PID 1, and PID 1 ignores
 * every signal it has no handler for, so a boot retrying an unreachable database (or waiting for the migration
 * lock) would ignore SIGTERM until the orchestrator's SIGKILL. A process still booting holds nothing a drain
 * could hand back; what a worker claimed in its last milliseconds of boot is swept as after a crash.
 * Returns what hands the signals over, called once the app's own handlers are in place.
 */
export function exitOnStopSignalsWhileBooting(app: string): () => void {
  const exit = (signal: NodeJS.Signals): void => {
    console.error(bootLine(app, `The ${app} stopped on ${signal} while starting.`));
    process.exit(128 + constants.signals[signal]);
  };
  for (const signal of STOP_SIGNALS) {
    process.on(signal, exit);
  }
  return () => {
    for (const signal of STOP_SIGNALS) {
      process.removeListener(signal, exit);
    }
  };
}
