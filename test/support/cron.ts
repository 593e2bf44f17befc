/**
 * A minute of the hour and an hour of the day half a period away from now (UTC): a schedule on them never
 * comes due on its own while a test runs, whatever the wall clock reads when the suite starts.
 */
export function awayFromNow(now = new Date()): { minute: number; hour: number } {
  return { minute: (now.getUTCMinutes() + 30) % 60, hour: (now.getUTCHours() + 12) % 24 };
}

/** Epoch seconds of the next daily slot at this UTC hour and minute: today's if still ahead, else tomorrow's. */
export function nextDaily(hour: number, minute: number, now = Date.now()): number {
  const day = new Date(now);
  const today = Date.UTC(day.getUTCFullYear(), day.getUTCMonth(), day.getUTCDate(), hour, minute);
  return (today > now ? today : today + 86_400_000) / 1000;
}

/** Epoch seconds of the next yearly slot at this UTC month (0-based), day and hour: this year's if still ahead, else next year's. */
export function nextYearly(month: number, day: number, hour: number, now = Date.now()): number {
  const year = new Date(now).getUTCFullYear();
  const thisYear = Date.UTC(year, month, day, hour);
  return (thisYear > now ? thisYear : Date.UTC(year + 1, month, day, hour)) / 1000;
}
