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

/**
 * Ctrl-C at a prompt: the whole command stops there, whatever loop it is in (never one item's failure);
 * it exits 130, the shell's code for an interrupt.
 */
export class Interrupted extends Error {
  constructor(message = 'Aborted; no changes made.') {
    super(message);
  }
}
