import { readFileSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

// Every name each public entry exports, against the list in test/public-api.txt. A name that disappears
// fails here: keep it, or remove it on purpose and say so in CHANGELOG.md. A new name is added to the list
// with UPDATE_PUBLIC_API=1 npx vitest run test/public-api.test.ts.
const root = fileURLToPath(new URL('..', import.meta.url));
const ENTRIES = [
  'index',
  'testing/index',
  'tools/index',
  'distributed/index',
  'distributed/http/index',
  'distributed/queue/index',
  'mcp/index',
  'stores/index',
  'retrieval/index',
];
const LIST = join(root, 'test', 'public-api.txt');

function exportedNames(): string[] {
  const files = ENTRIES.map((entry) => join(root, 'src', `${entry}.ts`));
  const program = ts.createProgram(files, {
    module: ts.ModuleKind.Preserve,
    moduleResolution: ts.ModuleResolutionKind.Bundler,
    target: ts.ScriptTarget.ES2022,
    skipLibCheck: true,
    noEmit: true,
  });
  const checker = program.getTypeChecker();
  const lines: string[] = [];
  for (const file of files) {
    const module = checker.getSymbolAtLocation(program.getSourceFile(file)!);
    const names = module ? checker.getExportsOfModule(module).map((symbol) => symbol.name) : [];
    for (const name of names.sort()) lines.push(`${relative(join(root, 'src'), file)}\t${name}`);
  }
  return lines;
}

describe('public API', () => {
  it('every entry exports the names in test/public-api.txt', () => {
    const now = exportedNames();
    if (process.env.UPDATE_PUBLIC_API === '1') writeFileSync(LIST, `${now.join('\n')}\n`);
    const listed = readFileSync(LIST, 'utf8').trim().split('\n');
    const gone = listed.filter((line) => !now.includes(line));
    const added = now.filter((line) => !listed.includes(line));
    expect({ gone, added }).toEqual({ gone: [], added: [] });
  }, 60_000);
});
