import { createSpinner } from 'nanospinner';
import { createColors } from 'picocolors';

import { CliError, Interrupted } from './cli-error';
import { Output } from './output';

type Colors = ReturnType<typeof createColors>;

export interface Progress {
  succeed(text?: string): void;
  fail(text?: string): void;
  /** Ends the step neither done nor failed: something to know before what comes next (an account that exists). */
  inform(text: string): void;
}

export interface Choice<T> {
  name: string;
  value: T;
}

/** Control characters in text that came from a server or a file are shown escaped, never interpreted. */
export function sanitize(text: string): string {
  // Matching control characters is the point here.
  // eslint-disable-next-line no-control-regex
  return text.replace(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`);
}

/**
 * Everything a command says or asks: one JSON document in --json mode, otherwise human lines,
 * colour only on a TTY without NO_COLOR, a spinner on a TTY, prompts only when stdin is a TTY.
 */
export class Terminal {
  readonly color: Colors;
  /** Prompts are allowed: not --json and stdin is a terminal. */
  readonly interactive: boolean;
  /** The width human output has to fit: a terminal's; null when stdout is not one (a pipe keeps every character). */
  readonly width: number | null;
  private readonly spinners: boolean;

  constructor(
    readonly json: boolean,
    private readonly output: Output,
  ) {
    const noColor = process.env.NO_COLOR !== undefined;
    this.color = createColors(!json && !noColor && Boolean(output.stdout.isTTY));
    this.interactive = !json && Boolean(output.stdin.isTTY);
    this.width = !json && output.stdout.isTTY ? output.stdout.columns || 80 : null;
    // A spinner redraws by the terminal's width: on one that reports none (a pty made without a size, as `script`
    // or a harness makes it) nanospinner divides by it and redraws forever, and the command never ends.
    this.spinners = !json && Boolean(output.stderr.isTTY) && (output.stderr.columns ?? 0) > 0 && process.env.TERM !== 'dumb';
  }

  /** A human line on stdout (nothing in --json mode). */
  line(text = ''): void {
    if (!this.json) {
      this.output.stdout.write(`${text}\n`);
    }
  }

  /** A side note on stderr, so stdout stays the command's result (nothing in --json mode). */
  note(text: string): void {
    if (!this.json) {
      this.output.stderr.write(`${this.color.dim(text)}\n`);
    }
  }

  warn(text: string): void {
    if (!this.json) {
      this.output.stderr.write(`${this.color.yellow(`Warning: ${text}`)}\n`);
    }
  }

  /** The command's JSON document (only in --json mode). */
  document(value: unknown): void {
    if (this.json) {
      this.output.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
    }
  }

  /**
   * Reports a failure (`{error, hint?}` on stdout in --json mode, red text on stderr otherwise); returns exit
   * code 1, or 130 for an interrupt, which is said plainly: the operator chose it.
   */
  failure(error: unknown): number {
    if (error instanceof Interrupted) {
      this.output.stderr.write(`${error.message}\n`);
      return 130;
    }
    const cliError = error instanceof CliError ? error : new CliError(error instanceof Error ? error.message : String(error));
    if (this.json) {
      this.document(cliError.hint ? { error: cliError.message, hint: cliError.hint } : { error: cliError.message });
    } else {
      this.output.stderr.write(`${this.color.red(`Error: ${sanitize(cliError.message)}`)}\n`);
      if (cliError.hint) {
        this.output.stderr.write(`${this.color.magenta(sanitize(cliError.hint))}\n`);
      }
    }
    return 1;
  }

  /** A spinner on a terminal, one plain line elsewhere, nothing in --json mode. */
  progress(text: string): Progress {
    if (this.json) {
      return { succeed: () => undefined, fail: () => undefined, inform: () => undefined };
    }
    if (!this.spinners) {
      // Without a spinner to turn into the outcome, the outcome is a line of its own when it says more than the step.
      this.output.stderr.write(`${text}...\n`);
      const outcome = (said?: string): void => void (said === undefined ? undefined : this.output.stderr.write(`${said}\n`));
      return { succeed: outcome, fail: outcome, inform: outcome };
    }
    const spinner = createSpinner(text, { stream: this.output.stderr as NodeJS.WriteStream }).start();
    return {
      succeed: (done) => void spinner.success({ text: done ?? text }),
      fail: (failed) => void spinner.error({ text: failed ?? text }),
      inform: (said) => void spinner.info({ text: said }),
    };
  }

  async confirm(message: string, defaultAnswer: boolean): Promise<boolean> {
    const { confirm } = await this.prompts();
    return this.ask(() => confirm({ message, default: defaultAnswer }));
  }

  async input(message: string, options: { default?: string; validate?: (value: string) => string | true } = {}): Promise<string> {
    const { input } = await this.prompts();
    return this.ask(() => input({ message, default: options.default, validate: options.validate }));
  }

  async secret(message: string): Promise<string> {
    const { password } = await this.prompts();
    return this.ask(() => password({ message, mask: '*' }));
  }

  async select<T>(message: string, choices: Choice<T>[]): Promise<T> {
    const { select } = await this.prompts();
    return this.ask(() => select<T>({ message, choices }));
  }

  private async prompts(): Promise<typeof import('@inquirer/prompts')> {
    if (!this.interactive) {
      throw new Error('A prompt was requested in a non-interactive run');
    }
    return import('@inquirer/prompts');
  }

  /** Ctrl-C at a prompt aborts the whole command without a stack trace. */
  private async ask<T>(prompt: () => Promise<T>): Promise<T> {
    try {
      return await prompt();
    } catch (error) {
      if (error instanceof Error && error.name === 'ExitPromptError') {
        throw new Interrupted();
      }
      throw error;
    }
  }
}
