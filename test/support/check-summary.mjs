// Last step of `npm test`: prints `N passed, N failed` and fails the run unless tests ran and none failed.
import { existsSync, readFileSync, rmSync } from 'node:fs';

const file = 'dist/test-summary.json';
if (!existsSync(file)) {
  console.log('0 passed, 1 failed');
  console.error('No test summary was written: the test run did not finish.');
  process.exit(1);
}
const { passed, failed, skipped } = JSON.parse(readFileSync(file, 'utf8'));
rmSync(file);
// Where every tool a test needs is installed (CI: .ci/run installs them), a skipped test could not fail.
if (skipped > 0 && process.env.TESTS_SKIPPED_FAIL === '1') {
  console.log(`${skipped} test(s) skipped although every tool they need should be installed: counted as failed.`);
  console.log(`${passed} passed, ${failed + skipped} failed`);
  process.exit(1);
}
console.log(`${passed} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ''}`);
process.exit(failed > 0 || passed === 0 ? 1 : 0);
