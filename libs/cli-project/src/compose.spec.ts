import { describe, expect, it } from 'vitest';

import { saysComposeIsMissing } from './compose';

describe('saysComposeIsMissing', () => {
  it.each([
    "docker: 'compose' is not a docker command.",
    "unknown shorthand flag: 'f' in -f",
    'docker: unknown command "compose"',
    // Docker 28
    "docker: unknown command: docker compose\n\nRun 'docker --help' for more information",
  ])('recognises %j', (stderr) => {
    expect(saysComposeIsMissing(stderr)).toBe(true);
  });

  it('is not fooled by a failure of compose itself', () => {
    expect(saysComposeIsMissing('no configuration file provided: not found')).toBe(false);
    expect(saysComposeIsMissing('service "web" refers to undefined network')).toBe(false);
  });
});
