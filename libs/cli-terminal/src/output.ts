/** A stream the CLI writes to: the process's own, or one a test captures. */
export interface OutputStream {
  write(text: string): unknown;
  readonly isTTY?: boolean;
  /** A terminal's width in characters. */
  readonly columns?: number;
}

/**
 * Where every command's output goes and whether it talks to a terminal: the process's stdout, stderr
 * and stdin. Provided to the commands by the CLI module, so a test can run a command in process and
 * read what it printed.
 */
export class Output {
  constructor(
    readonly stdout: OutputStream = process.stdout,
    readonly stderr: OutputStream = process.stderr,
    readonly stdin: { readonly isTTY?: boolean } = process.stdin,
  ) {}
}
