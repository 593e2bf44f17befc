import { afterAll, beforeEach } from 'vitest';

import { killLeftoverProcesses, outputsSince } from './processes';

// A failed test shows what the processes it overlapped last said (those spawned through processes.ts: apis,
// workers, entry points; an svc run's output is the test's own to show): when a run in CI fails once, their logs
// are the only account of why. A failed beforeAll prints nothing here: startApi and startWorker put the output in
// their own errors.
beforeEach(({ onTestFailed }) => {
  const began = Date.now();
  onTestFailed(() => {
    for (const output of outputsSince(began)) {
      console.error(output);
    }
  });
});

// After each test file's own afterAll hooks: whatever api, worker or CLI process is still running was
// lost by its test (a boot that outlasted the hook timeout, a test that failed before its cleanup).
afterAll(() => killLeftoverProcesses());
