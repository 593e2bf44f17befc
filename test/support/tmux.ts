import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';

import { waitFor } from './processes';

function shellQuote(value: string): string {
  return `'${value.replace(/'/g, `'\\''`)}'`;
}

/**
 * A program running in a real terminal (a detached tmux session on its own server socket): tests type
 * into it with send-keys and read the screen with capture-pane, exactly what an operator sees.
 */
export class TmuxSession {
  private readonly socket = `svc-test-${randomBytes(4).toString('hex')}`;

  private constructor() {}

  /** Starts `argv` with exactly `env`, in `cwd`, `columns` wide; the pane stays open after exit showing `EXIT:<code>`. */
  static start(argv: string[], env: Record<string, string>, cwd: string, columns = 160): TmuxSession {
    const session = new TmuxSession();
    const assignments = Object.entries(env).map(([key, value]) => `${key}=${shellQuote(value)}`);
    const command = `env -i ${assignments.join(' ')} ${argv.map(shellQuote).join(' ')}; echo "EXIT:$?"; sleep 600`;
    session.tmux('new-session', '-d', '-x', String(columns), '-y', '40', '-c', cwd, command);
    return session;
  }

  /** The visible screen; with `escapes`, including the colour escape sequences. */
  screen(escapes = false): string {
    return this.tmux('capture-pane', '-p', '-J', ...(escapes ? ['-e'] : []));
  }

  async waitForText(text: string | RegExp, timeoutMs = 20_000): Promise<string> {
    const matches = (screen: string) => (typeof text === 'string' ? screen.includes(text) : text.test(screen));
    try {
      await waitFor(async () => matches(this.screen()), timeoutMs, `${String(text)} on the terminal`);
    } catch (error) {
      throw new Error(`${(error as Error).message}\nscreen:\n${this.screen()}`, { cause: error });
    }
    return this.screen();
  }

  /** Types literal text, then presses the named keys (e.g. 'Enter'). */
  type(text: string, ...keys: string[]): void {
    if (text) {
      this.tmux('send-keys', '-l', text);
    }
    if (keys.length) {
      this.tmux('send-keys', ...keys);
    }
  }

  /** Waits for the program to exit and returns its exit code. */
  async exitCode(timeoutMs = 30_000): Promise<number> {
    const screen = await this.waitForText(/EXIT:\d+/, timeoutMs);
    return Number(/EXIT:(\d+)/.exec(screen)![1]);
  }

  kill(): void {
    try {
      this.tmux('kill-server');
    } catch {
      // already gone
    }
  }

  private tmux(...args: string[]): string {
    return execFileSync('tmux', ['-L', this.socket, '-f', '/dev/null', ...args], { encoding: 'utf8' });
  }
}
