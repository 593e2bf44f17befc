import { Logger } from '@nestjs/common';

/**
 * Warns at boot when a secret is shorter than what it guards needs, naming the variable and the risk, never
 * the value. Secrets of any length are accepted: the operator decides.
 */
export function warnIfShort(variable: string, value: string | undefined, minimum: number, risk: string): void {
  if (value !== undefined && value.length < minimum) {
    new Logger('Config').warn(`${variable} is shorter than ${minimum} characters: ${risk}.`);
  }
}
