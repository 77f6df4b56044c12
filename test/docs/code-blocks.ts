import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

/*
 * The ```ts blocks of the README and the docs pages, each compiled as its own module against the BUILT
 * package (dist/*.d.ts, as package.json's "exports" give them to a user), with strict settings. A block
 * preceded by the line `<!-- continues -->` is appended to the block before it in the same file (one example
 * told in two parts).
 */

export const ROOT = fileURLToPath(new URL('../../', import.meta.url));
export const CONTINUES = '<!-- continues -->';

/** One module made of Markdown code: its text, its file, and where each part starts in the module and the file. */
export interface Snippet {
  file: string;
  code: string;
  parts: { moduleLine: number; fileLine: number }[];
}

/** The Markdown files whose code is checked: the README and every page under docs/ (relative to the root). */
export function documentationFiles(): string[] {
  const pages: string[] = [];
  const walk = (dir: string) => {
    for (const entry of readdirSync(join(ROOT, dir), { withFileTypes: true })) {
      if (entry.name.startsWith('.') || entry.name === 'node_modules') continue;
      const path = `${dir}/${entry.name}`;
      if (entry.isDirectory()) walk(path);
      else if (entry.name.endsWith('.md')) pages.push(path);
    }
  };
  walk('docs');
  return ['README.md', ...pages.sort()];
}

/**
 * The ```ts blocks of a Markdown text as modules, indented ones (inside list items) included; `fileLine` is
 * the 1-based line of a block's first code line.
 */
export function snippetsOf(markdown: string, file: string): Snippet[] {
  const lines = markdown.split('\n');
  const snippets: Snippet[] = [];
  for (let index = 0; index < lines.length; index++) {
    // A fence may be indented (a block inside a list item): its lines lose that indentation.
    const open = /^( *)```ts\s*$/.exec(lines[index]!);
    if (!open) continue;
    const indent = open[1]!;
    const start = index + 1;
    let end = start;
    while (end < lines.length && lines[end]!.trim() !== '```') end++;
    const code = lines
      .slice(start, end)
      .map((line) => (line.startsWith(indent) ? line.slice(indent.length) : line.trimStart()))
      .join('\n');
    const previous = snippets.at(-1);
    if (lines[index - 1]?.trim() === CONTINUES && previous) {
      const moduleLine = previous.code.split('\n').length;
      previous.code += `\n${code}`;
      previous.parts.push({ moduleLine, fileLine: start + 1 });
    } else {
      snippets.push({ file, code, parts: [{ moduleLine: 0, fileLine: start + 1 }] });
    }
    index = end;
  }
  return snippets;
}

/** The line of the Markdown file of a (0-based) line of a snippet's module. */
function fileLineOf(snippet: Snippet, moduleLine: number): number {
  let part = snippet.parts[0]!;
  for (const candidate of snippet.parts) if (candidate.moduleLine <= moduleLine) part = candidate;
  return part.fileLine + moduleLine - part.moduleLine;
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
export const SETTINGS: Record<string, ts.CompilerOptions> = {
  bundler: { module: ts.ModuleKind.Preserve, moduleResolution: ts.ModuleResolutionKind.Bundler },
  node16: { module: ts.ModuleKind.Node16, moduleResolution: ts.ModuleResolutionKind.Node16 },
};

/**
 * Compiles each snippet as a module of a fresh project whose `node_modules/lagent-ts` is this repository, and
 * returns one line per error: `<file>:<line>: TS<code> <message>`.
 */
export function typeErrors(snippets: readonly Snippet[], resolution: keyof typeof SETTINGS): string[] {
  const dir = mkdtempSync(join(tmpdir(), 'lagent-doc-types-'));
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
      const file = join(dir, `snippet-${index}.ts`);
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
    const errors: { file: string; line: number; text: string }[] = [];
    for (const diagnostic of ts.getPreEmitDiagnostics(program)) {
      const message = ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n');
      const index = diagnostic.file ? files.indexOf(diagnostic.file.fileName) : -1;
      if (index === -1 || diagnostic.start === undefined) {
        const where = diagnostic.file ? relative(dir, diagnostic.file.fileName) : '(settings)';
        errors.push({ file: '', line: 0, text: `${where}: TS${diagnostic.code} ${message}` });
        continue;
      }
      const snippet = snippets[index]!;
      const { line } = diagnostic.file!.getLineAndCharacterOfPosition(diagnostic.start);
      const fileLine = fileLineOf(snippet, line);
      errors.push({
        file: snippet.file,
        line: fileLine,
        text: `${snippet.file}:${fileLine}: TS${diagnostic.code} ${message}`,
      });
    }
    return errors.sort((a, b) => a.file.localeCompare(b.file) || a.line - b.line).map((error) => error.text);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Every snippet of the README and the docs pages. */
export function documentationSnippets(): Snippet[] {
  return documentationFiles().flatMap((file) => snippetsOf(readFileSync(join(ROOT, file), 'utf8'), file));
}
