/** What PostgreSQL cannot store as sent: U+0000, and half of a UTF-16 surrogate pair (jsonb refuses its escape; text turns it into U+FFFD). */
export type Unstorable = 'nul' | 'surrogate';

/** How an error names each, e.g. "must not contain NUL (\u0000) characters". */
export const UNSTORABLE: Record<Unstorable, string> = {
  nul: 'NUL (\\u0000) characters',
  surrogate: 'unpaired UTF-16 surrogates (\\ud800-\\udfff)',
};

/**
 * Every surface (REST and MCP arguments, /ws frames, A2A messages) refuses a string PostgreSQL cannot
 * store, by name, before it reaches a query.
 */
export function unstorable(text: string): Unstorable | null {
  if (text.includes('\u0000')) {
    return 'nul';
  }
  return text.isWellFormed() ? null : 'surrogate';
}

/**
 * What a component hands back (its content, its error), made storable: a NUL and each half of a surrogate pair
 * become U+FFFD, as text does with the latter. Refusing it, as input is refused, would lose the run's result.
 */
export function storableText(text: string): string {
  return text.replaceAll('\u0000', '\ufffd').toWellFormed();
}

/** `text` cut to `max` UTF-16 units and an ellipsis, never inside a surrogate pair (jsonb refuses the half left). */
export function clipped(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max).toWellFormed()}…` : text;
}
