import { readdirSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { type BenchRow, meetsTarget, type Suite } from './report';

/**
 * Runs every suite in bench/ (each file exporting `run`) and prints its figures with the targets the
 * issues name. A benchmark, not a test: it reports, and exits non-zero only if a suite crashes.
 */
const folder = fileURLToPath(new URL('.', import.meta.url));
const only = process.argv.slice(2);
const files = readdirSync(folder)
  .filter((file) => file.endsWith('.ts') && file !== 'index.ts' && file !== 'report.ts')
  .filter((file) => only.length === 0 || only.some((name) => file.startsWith(name)))
  .sort();

const rows: (BenchRow & { suite: string })[] = [];
function format(row: BenchRow): string {
  const value =
    row.value >= 100 ? row.value.toFixed(0) : row.value >= 1 ? row.value.toFixed(2) : row.value.toFixed(3);
  const target =
    row.target === undefined
      ? ''
      : `  target ${row.atLeast ? '>=' : '<='} ${row.target} ${row.unit}  ${meetsTarget(row) ? 'ok' : 'MISSED'}`;
  const note = row.note ? `  (${row.note})` : '';
  return `  ${row.name}: ${value} ${row.unit}${target}${note}`;
}

console.log(`lagent-ts benchmarks — node ${process.version}, ${process.arch}`);
for (const file of files) {
  const suite = file.replace(/\.ts$/, '');
  const module = (await import(pathToFileURL(`${folder}${file}`).href)) as { run?: Suite };
  // A file without `run` is a suite's helper.
  if (typeof module.run !== 'function') continue;
  console.log(`\n${suite}`);
  await module.run((row) => {
    rows.push({ ...row, suite });
    console.log(format(row));
  });
}
const missed = rows.filter((row) => !meetsTarget(row));
console.log(
  `\n${rows.length} figures, ${missed.length} missing their target${missed.length ? `: ${missed.map((row) => row.name).join('; ')}` : ''}`,
);
