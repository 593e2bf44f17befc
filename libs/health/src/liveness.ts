import { Injectable } from '@nestjs/common';

/** Why a part of the process is stuck, or null while it makes progress. */
export type LivenessCheck = () => string | null;

/**
 * What a liveness probe asks beyond "the process answers": parts that can hang while the event loop
 * runs on (a database call that never returns), which only a restart mends.
 */
@Injectable()
export class Liveness {
  private readonly checks: LivenessCheck[] = [];

  add(check: LivenessCheck): void {
    this.checks.push(check);
  }

  problems(): string[] {
    return this.checks.map((check) => check()).filter((problem): problem is string => problem !== null);
  }
}
