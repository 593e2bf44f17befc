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
console.log(`${passed} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ''}`);
process.exit(failed > 0 || passed === 0 ? 1 : 0);
