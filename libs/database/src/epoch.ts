/** The API speaks integer epoch seconds for every timestamp. */
export function toEpoch(date: Date): number;
export function toEpoch(date: Date | null | undefined): number | null;
export function toEpoch(date: Date | null | undefined): number | null {
  return date ? Math.floor(date.getTime() / 1000) : null;
}
