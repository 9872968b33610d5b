// Prints one closing line over the vitest JSON reports: "N passed, N failed, N skipped".
// Arguments: the reports expected in .test-results (default unit and e2e; scripts/test adds one per
// other Kubernetes release it ran suites on).
import { existsSync, readFileSync } from 'node:fs';

const projects = process.argv.length > 2 ? process.argv.slice(2) : ['unit', 'e2e'];

let passed = 0;
let failed = 0;
let skipped = 0;
for (const project of projects) {
  const file = `.test-results/${project}.json`;
  if (!existsSync(file)) {
    // The runner died before writing its report: that is a failure, not zero tests.
    process.stderr.write(`${project}: no test report (the run did not finish)\n`);
    failed += 1;
    continue;
  }
  const r = JSON.parse(readFileSync(file, 'utf8'));
  passed += r.numPassedTests ?? 0;
  failed += (r.numFailedTests ?? 0) + (r.numRuntimeErrorTestSuites ?? 0);
  skipped += (r.numPendingTests ?? 0) + (r.numTodoTests ?? 0);
}
process.stdout.write(`${passed} passed, ${failed} failed, ${skipped} skipped\n`);
