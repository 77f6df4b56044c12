// Prints the one closing line CI reads, `N passed, N failed[, N skipped]`, from vitest's JSON report.
// A failing step outside vitest (lint, typecheck, build, pack checks) counts as one failure.
import { existsSync, readFileSync } from 'node:fs';

const [reportPath = 'reports/vitest.json', exitCode = '0'] = process.argv.slice(2);
let passed = 0;
let failed = 0;
let skipped = 0;
if (existsSync(reportPath)) {
  const report = JSON.parse(readFileSync(reportPath, 'utf8'));
  passed = report.numPassedTests ?? 0;
  failed = report.numFailedTests ?? 0;
  skipped = (report.numPendingTests ?? 0) + (report.numTodoTests ?? 0);
}
if (Number(exitCode) !== 0 && failed === 0) failed = 1;
console.log(`${passed} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ''}`);
