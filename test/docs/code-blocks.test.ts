import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CONTINUES, documentationSnippets, ROOT, SETTINGS, snippetsOf, typeErrors } from './code-blocks';

describe('code in the README and the docs pages', () => {
  const built = existsSync(join(ROOT, 'dist', 'index.d.ts'));

  it.each(Object.keys(SETTINGS))(
    'every ts block type-checks against the built package (moduleResolution %s)',
    (resolution) => {
      if (!built) throw new Error('dist/index.d.ts is missing: run npm run build first');
      const snippets = documentationSnippets();
      expect(snippets.filter((snippet) => snippet.file === 'README.md').length).toBeGreaterThan(0);
      expect(snippets.filter((snippet) => snippet.file.startsWith('docs/')).length).toBeGreaterThan(40);
      expect(
        typeErrors(snippets, resolution),
        'documentation code that does not type-check against dist/ (after a change in src/, run npm run build again)',
      ).toEqual([]);
    },
    120_000,
  );

  it('reports an error at its file and line, in a block and in its continuation', () => {
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
    const snippets = snippetsOf(markdown, 'docs/guide/page.md');
    expect(snippets).toHaveLength(2);
    const errors = typeErrors(snippets, 'bundler');
    expect(errors.map((error) => error.split(': ')[0])).toEqual([
      'docs/guide/page.md:11',
      'docs/guide/page.md:16',
    ]);
    expect(errors[0]).toMatch(/TS2339 Property 'noSuchField' does not exist/);
  });
});
