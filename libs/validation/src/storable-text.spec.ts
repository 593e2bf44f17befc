import { describe, expect, it } from 'vitest';

import { clipped, unstorable } from './storable-text';

describe('storable text', () => {
  it('names what PostgreSQL cannot store: NUL, and half of a surrogate pair; a whole pair is fine', () => {
    expect(unstorable('a\u0000b')).toBe('nul');
    expect(unstorable('hi \ud83d')).toBe('surrogate');
    expect(unstorable('\ude00 at the start')).toBe('surrogate');
    expect(unstorable('hi \ud83d\ude00')).toBeNull();
  });

  it('clips without leaving half of a pair behind', () => {
    const emoji = '\ud83d\ude00';
    const text = emoji.repeat(3);
    // Cut after 3 units: inside the second pair.
    expect(clipped(text, 3)).toBe(`${emoji}\ufffd…`);
    expect(unstorable(clipped(text, 3))).toBeNull();
    expect(clipped(text, 4)).toBe(`${emoji.repeat(2)}…`);
    expect(clipped(text, 6)).toBe(text);
  });
});
