import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

import { defineConfig } from 'vitest/config';

// The @app/* aliases come from tsconfig.json's paths, so there is one list to keep.
const { compilerOptions } = JSON.parse(readFileSync(new URL('./tsconfig.json', import.meta.url), 'utf8')) as {
  compilerOptions: { paths: Record<string, string[]> };
};
const aliases = Object.fromEntries(
  Object.entries(compilerOptions.paths).map(([name, [target]]) => [name, fileURLToPath(new URL(target, import.meta.url))]),
);

export default defineConfig({
  resolve: {
    alias: aliases,
  },
  test: {
    include: [
      'apps/**/*.spec.ts',
      'apps/**/*.e2e-spec.ts',
      'libs/**/*.spec.ts',
      'libs/**/*.int-spec.ts',
      'apps/**/*.int-spec.ts',
      'test/**/*.spec.ts',
    ],
    globalSetup: ['test/support/global-setup.ts'],
    // Prints a failed test's process logs; kills what a test file's processes left running, after its own cleanup.
    setupFiles: ['test/support/process-hooks.ts'],
    reporters: ['default', './test/support/summary-reporter.ts'],
    // Tests boot real api and worker processes on two cores shared with other work: boots alone can take 10+ s.
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // A poll waits on another process (a claim, a run, an outcome): on a loaded machine that takes more than
    // the default second. A poll that succeeds returns at once, so only a failing one takes longer.
    expect: { poll: { timeout: 10_000 } },
    // Two cores: each e2e file boots real processes; more forks only thrash.
    pool: 'forks',
    maxWorkers: 2,
  },
});
