import { afterAll } from 'vitest';

import { killLeftoverProcesses } from './processes';

// After each test file's own afterAll hooks: whatever api, worker or CLI process is still running was
// lost by its test (a boot that outlasted the hook timeout, a test that failed before its cleanup).
afterAll(() => killLeftoverProcesses());
