/**
 * An error the CLI reports to its user: a message, an optional hint on what to do, and the exit code.
 * Anything else that escapes a command is reported by message only (never a stack trace).
 */
export class CliError extends Error {
  constructor(
    message: string,
    readonly hint?: string,
    readonly exitCode = 1,
  ) {
    super(message);
  }
}

/** Exit codes of the spec's CLI section. */
export const EXIT = { ok: 0, error: 1, usage: 2, partial: 3 } as const;
