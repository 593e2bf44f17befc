/** While a condition lasts, it is said again at most this often. */
export const SAID_AGAIN_EVERY_MS = 60_000;

/**
 * A condition met over and over (a failing export, a database that is down at every scrape, an api that refuses
 * connections), said in the log when it starts, at most once a minute while it lasts, and once when it ends: said
 * at every occurrence, it would bury the rest of the log.
 */
export class LastingCondition {
  private said: { at: number; tally: number } | null = null;
  private lastMetAt = 0;

  constructor(private readonly everyMs = SAID_AGAIN_EVERY_MS) {}

  /**
   * Met again, `count` times (spans dropped, scrapes answered without figures): `say` gets the count since it was
   * last said, when the condition starts and when a period has passed since.
   */
  met(count: number, say: (tally: number) => void): void {
    this.lastMetAt = Date.now();
    const tally = (this.said?.tally ?? 0) + count;
    if (this.said === null || Date.now() - this.said.at >= this.everyMs) {
      say(tally);
      this.said = { at: Date.now(), tally: 0 };
    } else {
      this.said.tally = tally;
    }
  }

  /**
   * Over if it has not been met for a period: for a condition that comes and goes while it lasts (some callers
   * still meet it, others no longer), where ending at every success would say it again at every failure.
   */
  endedIfQuiet(say: (tally: number) => void): void {
    if (Date.now() - this.lastMetAt >= this.everyMs) {
      this.ended(say);
    }
  }

  /** Over: `say` gets the count met since it was last said, once, if the condition had been said. */
  ended(say: (tally: number) => void): void {
    if (this.said !== null) {
      say(this.said.tally);
      this.said = null;
    }
  }
}
