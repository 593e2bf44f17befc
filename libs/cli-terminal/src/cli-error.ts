/**
 * An error the CLI reports to its user: a message and an optional hint on what to do; the command
 * exits 1. Anything else that escapes a command is reported by message only (never a stack trace).
 */
export class CliError extends Error {
  constructor(
    message: string,
    readonly hint?: string,
  ) {
    super(message);
  }
}
