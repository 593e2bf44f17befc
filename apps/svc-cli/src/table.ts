import { sanitize, Terminal } from '@app/cli-terminal';

/** A time in UTC to the minute, or `-`. */
export function formatTime(epoch: number | null | undefined): string {
  return epoch === null || epoch === undefined ? '-' : `${new Date(epoch * 1000).toISOString().slice(0, 16).replace('T', ' ')} UTC`;
}

/** A time in UTC to the second, or `-` (for events seconds apart, such as the fires of a schedule). */
export function formatSeconds(epoch: number | null | undefined): string {
  return epoch === null || epoch === undefined ? '-' : `${new Date(epoch * 1000).toISOString().slice(0, 19).replace('T', ' ')} UTC`;
}

/** Text that came from the service, on one line and at most `max` characters. */
export function cell(text: string | null | undefined, max = 60): string {
  if (text === null || text === undefined || text === '') {
    return '-';
  }
  const line = sanitize(text.replace(/\s+/g, ' ').trim());
  return line.length > max ? `${line.slice(0, max - 1)}…` : line;
}

/** Colours a cell (already padded, so escapes never shift the columns); only called where colour is on. */
export type Paint = (text: string, column: number, row: string[]) => string;

/** The narrowest a column is cut to: its header, and at least enough to tell values apart. */
const MIN_COLUMN = 8;
/** A column this narrow (a status, a count, a code) is never cut: a cut one says nothing. */
const WHOLE_UP_TO = 12;

/** A time as formatTime and formatSeconds write it. */
const TIME = /^\d{4}-(\d\d-\d\d \d\d:\d\d)(:\d\d)? UTC$/;
/** What a time keeps where its column is cut: month, day, hours and minutes (`11-29 19:48`), not `2026-11…`. */
const SHORT_TIME = 11;

/** A cell in `width` characters: a time by its short form (its seconds kept where they fit), other text cut with `…`. */
function fitCell(text: string, width: number): string {
  if (text.length <= width) {
    return text;
  }
  const time = TIME.exec(text);
  const short = time ? [`${time[1]}${time[2] ?? ''}`, time[1]].find((form) => form.length <= width) : undefined;
  return short ?? `${text.slice(0, width - 1)}…`;
}

/** How narrow a column may be cut: never below its header, nor a time below its short form, nor a narrow column at all. */
function minimumWidth(title: string, cells: string[], natural: number): number {
  if (natural <= WHOLE_UP_TO) {
    return natural;
  }
  const floor = cells.some((text) => TIME.test(text)) ? SHORT_TIME : MIN_COLUMN;
  return Math.min(natural, Math.max(title.length, floor));
}

/**
 * Column widths that fit `width` with their two-space gaps: the widest column loses a character at a time
 * (scopes, an error) while it is wider than its minimum, so narrow ones (a status, a time) stay whole.
 */
function fitWidths(widths: number[], minimums: number[], width: number): number[] {
  const fit = [...widths];
  let excess = fit.reduce((sum, each) => sum + each, 2 * (fit.length - 1)) - width;
  while (excess > 0) {
    const shrinkable = fit.map((each, column) => (each > minimums[column] ? column : -1)).filter((column) => column >= 0);
    if (shrinkable.length === 0) {
      break;
    }
    const widest = shrinkable.reduce((best, column) => (fit[column] > fit[best] ? column : best));
    fit[widest] -= 1;
    excess -= 1;
  }
  return fit;
}

export interface TableOptions {
  /** Colours a cell; applied only where the Terminal allows colour. */
  paint?: Paint;
  /**
   * Columns never cut: what the reader copies into the next command (an id, a name). The first column is always
   * one; a row wraps rather than show an id that no command takes.
   */
  whole?: number[];
}

/**
 * Aligned columns and a bold header. On a terminal narrower than the table, the widest cells are cut with `…`
 * (never the first column, nor the `whole` ones, nor a narrow one; a time drops its year and zone first) so that
 * no row wraps where they can fit; piped output keeps them whole.
 * Cells are printed as given: sanitize service text first.
 */
export function printTable(header: string[], rows: string[][], terminal: Terminal, { paint, whole = [] }: TableOptions = {}): void {
  const natural = header.map((title, column) => Math.max(title.length, ...rows.map((row) => row[column].length)));
  const uncut = new Set([0, ...whole]);
  const widths = terminal.width
    ? fitWidths(
        natural,
        header.map((title, column) =>
          uncut.has(column)
            ? natural[column]
            : minimumWidth(
                title,
                rows.map((row) => row[column]),
                natural[column],
              ),
        ),
        terminal.width,
      )
    : natural;
  const format = (cells: string[], painter?: Paint): string => {
    const last = cells.length - 1;
    return cells
      .map((full, column) => {
        const text = fitCell(full, widths[column]);
        const padded = column === last ? text : text.padEnd(widths[column]);
        return painter ? painter(padded, column, cells) : padded;
      })
      .join('  ')
      .trimEnd();
  };
  terminal.line(terminal.color.bold(format(header)));
  const colour = terminal.color.isColorSupported ? paint : undefined;
  for (const row of rows) {
    terminal.line(format(row, colour));
  }
}

/** A status in the colour of how it ended: green done, red failed, yellow waiting, cyan running. */
export function statusColour(terminal: Terminal, status: string): (text: string) => string {
  const { color } = terminal;
  switch (status.trim()) {
    case 'completed':
    case 'success':
      return color.green;
    case 'failed':
      return color.red;
    case 'queued':
    case 'paused':
      return color.yellow;
    case 'running':
      return color.cyan;
    default:
      return color.dim;
  }
}

/** `label: value` lines with the values aligned. */
export function printFields(fields: [string, string][], terminal: Terminal): void {
  const width = Math.max(...fields.map(([label]) => label.length)) + 1;
  for (const [label, value] of fields) {
    terminal.line(`${`${label}:`.padEnd(width)} ${value}`);
  }
}
