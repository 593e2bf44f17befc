/**
 * A minute of the hour and an hour of the day half a period away from now (UTC): a schedule on them never
 * comes due on its own while a test runs, whatever the wall clock reads when the suite starts.
 */
export function awayFromNow(now = new Date()): { minute: number; hour: number } {
  return { minute: (now.getUTCMinutes() + 30) % 60, hour: (now.getUTCHours() + 12) % 24 };
}
