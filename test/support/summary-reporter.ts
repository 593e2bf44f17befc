import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';

import type { Reporter, SerializedError, TestModule, TestRunEndReason } from 'vitest/node';

/** Where the counts go for test/support/check-summary.mjs, the last step of `npm test`. */
export const SUMMARY_FILE = 'dist/test-summary.json';

/**
 * Counts the run for the closing line CI reads, `N passed, N failed`. Files that fail to load
 * and errors outside tests (a global setup that throws) count as failures, and a run that
 * executed no test fails. The counts are written to a file because Vitest 4 can exit 0 when
 * its global setup throws; check-summary.mjs turns them into the exit code.
 */
export default class SummaryReporter implements Reporter {
  onTestRunEnd(testModules: ReadonlyArray<TestModule>, unhandledErrors: ReadonlyArray<SerializedError>, _reason: TestRunEndReason): void {
    let passed = 0;
    let failed = unhandledErrors.length;
    let skipped = 0;
    for (const module of testModules) {
      const tests = [...module.children.allTests()];
      for (const test of tests) {
        const state = test.result().state;
        if (state === 'passed') {
          passed += 1;
        } else if (state === 'failed') {
          failed += 1;
        } else {
          skipped += 1;
        }
      }
      // A file that fails outside its tests (a load error, a failing beforeAll whose tests were then
      // skipped) counts once, unless one of its tests already failed.
      if (module.state() === 'failed' && !tests.some((test) => test.result().state === 'failed')) {
        failed += 1;
      }
    }
    if (passed === 0 && failed === 0) {
      failed = 1;
    }
    mkdirSync(dirname(SUMMARY_FILE), { recursive: true });
    writeFileSync(SUMMARY_FILE, JSON.stringify({ passed, failed, skipped }));
  }
}
