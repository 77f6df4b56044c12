// Prints the one closing line CI reads, `N passed, N failed[, N skipped]`, summed over vitest's JSON
// reports: `node scripts/test-summary.mjs EXIT_CODE [REPORT...]`. A failing step outside vitest (install,
// lint, typecheck, build, pack checks) or a missing report counts as one failure.
import { existsSync, readFileSync } from 'node:fs';

const [exitCode = '0', ...reports] = process.argv.slice(2);
let passed = 0;
let failed = 0;
let skipped = 0;
let missing = false;
for (const reportPath of reports) {
  if (!existsSync(reportPath)) {
    missing = true;
    continue;
  }
  const report = JSON.parse(readFileSync(reportPath, 'utf8'));
  passed += report.numPassedTests ?? 0;
  failed += report.numFailedTests ?? 0;
  skipped += (report.numPendingTests ?? 0) + (report.numTodoTests ?? 0);
}
if ((Number(exitCode) !== 0 || missing || reports.length === 0) && failed === 0) failed = 1;
console.log(`${passed} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ''}`);
