import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

/*
 * Every ```ts block of README.md, compiled as its own module against the BUILT package (dist/*.d.ts, as
 * package.json's "exports" give them to a user), with strict settings. A block preceded by the line
 * `<!-- continues -->` is appended to the block before it (one example told in two parts).
 */

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const CONTINUES = '<!-- continues -->';

/** One module made of README code: its text and, per part, where the part starts in the module and the README. */
interface Snippet {
  code: string;
  parts: { moduleLine: number; readmeLine: number }[];
}

/** The ```ts blocks of a Markdown text as modules; `readmeLine` is the 1-based line of a block's first code line. */
function snippetsOf(markdown: string): Snippet[] {
  const lines = markdown.split('\n');
  const snippets: Snippet[] = [];
  for (let index = 0; index < lines.length; index++) {
    if (!/^```ts\s*$/.test(lines[index]!)) continue;
    const start = index + 1;
    let end = start;
    while (end < lines.length && !/^```\s*$/.test(lines[end]!)) end++;
    const code = lines.slice(start, end).join('\n');
    const previous = snippets.at(-1);
    if (lines[index - 1]?.trim() === CONTINUES && previous) {
      const moduleLine = previous.code.split('\n').length;
      previous.code += `\n${code}`;
      previous.parts.push({ moduleLine, readmeLine: start + 1 });
    } else {
      snippets.push({ code, parts: [{ moduleLine: 0, readmeLine: start + 1 }] });
    }
    index = end;
  }
  return snippets;
}

/** The README line of a (0-based) line of a snippet's module. */
function readmeLineOf(snippet: Snippet, moduleLine: number): number {
  let part = snippet.parts[0]!;
  for (const candidate of snippet.parts) if (candidate.moduleLine <= moduleLine) part = candidate;
  return part.readmeLine + moduleLine - part.moduleLine;
}

/** The packages a snippet imports by bare name (`zod`, `@scope/name`), other than lagent-ts and node:. */
function barePackages(code: string): string[] {
  const names = new Set<string>();
  for (const [, specifier] of code.matchAll(/\bfrom\s+['"]([^'"]+)['"]/g)) {
    if (!specifier || specifier.startsWith('.') || specifier.startsWith('node:')) continue;
    const name = specifier.startsWith('@')
      ? specifier.split('/').slice(0, 2).join('/')
      : specifier.split('/')[0]!;
    if (name !== 'lagent-ts') names.add(name);
  }
  return [...names];
}

/** The compiler settings a user of the package would have: strict, ESM, either module resolution. */
const SETTINGS: Record<string, ts.CompilerOptions> = {
  bundler: { module: ts.ModuleKind.Preserve, moduleResolution: ts.ModuleResolutionKind.Bundler },
  node16: { module: ts.ModuleKind.Node16, moduleResolution: ts.ModuleResolutionKind.Node16 },
};

/**
 * Compiles each snippet as a module of a fresh project whose `node_modules/lagent-ts` is this repository, and
 * returns one line per error: `README.md:<line>: TS<code> <message>`.
 */
function typeErrors(snippets: readonly Snippet[], resolution: keyof typeof SETTINGS): string[] {
  const dir = mkdtempSync(join(tmpdir(), 'lagent-readme-types-'));
  try {
    const modules = join(dir, 'node_modules');
    mkdirSync(modules);
    symlinkSync(ROOT, join(modules, 'lagent-ts'), 'dir');
    const linked = new Set(['@types', ...snippets.flatMap((snippet) => barePackages(snippet.code))]);
    for (const name of linked) {
      const target = join(ROOT, 'node_modules', name);
      if (!existsSync(target)) continue;
      mkdirSync(dirname(join(modules, name)), { recursive: true });
      symlinkSync(target, join(modules, name), 'dir');
    }
    writeFileSync(join(dir, 'package.json'), JSON.stringify({ type: 'module' }));
    const files = snippets.map((snippet, index) => {
      const file = join(dir, `readme-${index}.ts`);
      writeFileSync(file, snippet.code);
      return file;
    });
    const program = ts.createProgram(files, {
      ...SETTINGS[resolution],
      target: ts.ScriptTarget.ES2022,
      lib: ['lib.es2023.d.ts'],
      types: ['node'],
      strict: true,
      skipLibCheck: true,
      noEmit: true,
      // each snippet is a module of its own, even one without imports
      moduleDetection: ts.ModuleDetectionKind.Force,
    });
    const errors: { line: number; text: string }[] = [];
    for (const diagnostic of ts.getPreEmitDiagnostics(program)) {
      const message = ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n');
      const index = diagnostic.file ? files.indexOf(diagnostic.file.fileName) : -1;
      if (index === -1 || diagnostic.start === undefined) {
        errors.push({
          line: 0,
          text: `${diagnostic.file?.fileName ?? '(settings)'}: TS${diagnostic.code} ${message}`,
        });
        continue;
      }
      const { line } = diagnostic.file!.getLineAndCharacterOfPosition(diagnostic.start);
      const readmeLine = readmeLineOf(snippets[index]!, line);
      errors.push({ line: readmeLine, text: `README.md:${readmeLine}: TS${diagnostic.code} ${message}` });
    }
    return errors.sort((a, b) => a.line - b.line).map((error) => error.text);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe('README types', () => {
  const built = existsSync(join(ROOT, 'dist', 'index.d.ts'));

  it.each(Object.keys(SETTINGS))(
    'every ts block type-checks against the built package (moduleResolution %s)',
    (resolution) => {
      if (!built) throw new Error('dist/index.d.ts is missing: run npm run build first');
      const markdown = readFileSync(join(ROOT, 'README.md'), 'utf8');
      const snippets = snippetsOf(markdown);
      expect(snippets.length).toBeGreaterThan(10);
      expect(
        typeErrors(snippets, resolution),
        'README code that does not type-check against dist/ (after a change in src/, run npm run build again)',
      ).toEqual([]);
    },
    60_000,
  );

  it('reports an error at its README line, in a block and in its continuation', () => {
    if (!built) throw new Error('dist/index.d.ts is missing: run npm run build first');
    const markdown = [
      '# Title', // 1
      '', // 2
      '```ts', // 3
      "import { AgentMessage } from 'lagent-ts';", // 4
      "const message = new AgentMessage({ content: 'hi' });", // 5
      '```', // 6
      '', // 7
      CONTINUES, // 8
      '```ts', // 9
      'message.content;', // 10
      'message.noSuchField;', // 11
      '```', // 12
      '', // 13
      '```ts', // 14
      "import { Agent } from 'lagent-ts';", // 15
      'new Agent({ llm: 42 });', // 16
      '```', // 17
      '```bash', // 18
      'not typescript', // 19
      '```', // 20
    ].join('\n');
    const snippets = snippetsOf(markdown);
    expect(snippets).toHaveLength(2);
    const errors = typeErrors(snippets, 'bundler');
    expect(errors.map((error) => error.split(': ')[0])).toEqual(['README.md:11', 'README.md:16']);
    expect(errors[0]).toMatch(/TS2339 Property 'noSuchField' does not exist/);
  });
});
