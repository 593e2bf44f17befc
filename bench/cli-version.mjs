// `svc --version` start-up cost: median wall time of the built binary beside a bare `node -e 0` (the
// floor any Node CLI pays) and beside a command that boots the Nest command tree (`svc status --help`),
// which is what --version must not pay. Runs alternate between the cases so load drifts hit all alike.
import { spawnSync } from 'node:child_process';

import { machine, median } from './support.mjs';

const RUNS = Number(process.env.BENCH_RUNS ?? 30);

const CASES = [
  ['node -e 0', ['-e', '0']],
  ['svc --version', ['bin/svc.js', '--version']],
  ['svc status --help (boots the command tree)', ['bin/svc.js', 'status', '--help']],
];

function wallMillis(args) {
  const started = process.hrtime.bigint();
  const result = spawnSync(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  if (result.status !== 0) {
    throw new Error(`node ${args.join(' ')} exited ${result.status}: ${result.stderr}`);
  }
  return Number(process.hrtime.bigint() - started) / 1e6;
}

export async function benchCliVersion() {
  const samples = CASES.map(() => []);
  for (let run = 0; run < RUNS; run += 1) {
    CASES.forEach(([, args], index) => samples[index].push(wallMillis(args)));
  }
  const floor = median(samples[0]);
  const rows = CASES.map(([name], index) => {
    const value = median(samples[index]);
    return `| ${name} | ${value.toFixed(0)} | ${(value / floor).toFixed(2)} |`;
  });
  return [
    '## CLI start-up (`node bench/run.mjs cli-version`)',
    '',
    `Machine: ${machine()}.`,
    '',
    `${RUNS} alternating runs per case, median wall time of the whole process (spawn to exit).`,
    '',
    '| case | median ms | vs node -e 0 |',
    '|---|---:|---:|',
    ...rows,
  ].join('\n');
}
