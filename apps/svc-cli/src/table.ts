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

/** Aligned columns, a bold header (bold only where colour is on). Cells are printed as given: sanitize service text first. */
export function printTable(header: string[], rows: string[][], terminal: Terminal): void {
  const widths = header.map((title, column) => Math.max(title.length, ...rows.map((row) => row[column].length)));
  const format = (cells: string[]): string => cells.map((text, column) => text.padEnd(widths[column])).join('  ').trimEnd();
  terminal.line(terminal.color.bold(format(header)));
  for (const row of rows) {
    terminal.line(format(row));
  }
}

/** `label: value` lines with the values aligned. */
export function printFields(fields: [string, string][], terminal: Terminal): void {
  const width = Math.max(...fields.map(([label]) => label.length)) + 1;
  for (const [label, value] of fields) {
    terminal.line(`${`${label}:`.padEnd(width)} ${value}`);
  }
}
