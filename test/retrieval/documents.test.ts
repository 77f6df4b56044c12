import { ActionStatusCode, ConfigurationError, ValidationError } from 'lagent-ts';
import { ingest, MemoryVectorStore, retrievalTool, splitText } from 'lagent-ts/retrieval';
import { HashEmbedder } from 'lagent-ts/testing';
import { describe, expect, it } from 'vitest';

const words = (count: number, prefix = 'word') =>
  Array.from({ length: count }, (_, index) => `${prefix}${index}`).join(' ');
/** One token per word (a word and its trailing space). */
const perWord = (text: string) => text.split(/\s+/).filter((word) => word !== '').length;

describe('splitText', () => {
  it('keeps paragraphs whole where they fit, cuts longer ones by sentences and words, and covers the text', () => {
    const paragraphs = [
      words(5, 'a'),
      words(30, 'b'),
      `${words(8, 'c')}. ${words(8, 'd')}. ${words(8, 'e')}.`,
    ];
    const text = paragraphs.join('\n\n');
    const chunks = splitText(text, { chunkTokens: 10, countTokens: perWord });
    for (const chunk of chunks) {
      expect(chunk.tokens).toBeLessThanOrEqual(10);
      expect(text.slice(chunk.start, chunk.end)).toBe(chunk.text);
    }
    // Neighbouring pieces are joined while they fit: the first paragraph and the start of the second.
    expect(chunks[0]!.text.startsWith(`${paragraphs[0]}\n\nb0`)).toBe(true);
    // Every word is in some chunk, in order, without overlap.
    expect(
      chunks
        .map((chunk) => chunk.text)
        .join(' ')
        .split(/\s+/),
    ).toEqual(text.split(/\s+/));
    expect(chunks.some((chunk) => chunk.text === `${words(8, 'c')}.`)).toBe(true);
  });

  it('repeats the end of a chunk at the start of the next, up to overlapTokens', () => {
    const text = words(40);
    const chunks = splitText(text, { chunkTokens: 10, overlapTokens: 3, countTokens: perWord });
    expect(chunks[0]!.text).toBe(words(10));
    expect(chunks[1]!.text.startsWith('word7 word8 word9 word10')).toBe(true);
    for (const chunk of chunks) expect(chunk.tokens).toBeLessThanOrEqual(10);
    expect(chunks.at(-1)!.text.endsWith('word39')).toBe(true);
  });

  it('cuts text without separators between characters, never inside a surrogate pair', () => {
    const text = '😀'.repeat(50) + 'x'.repeat(101);
    const chunks = splitText(text, { chunkTokens: 10 });
    for (const chunk of chunks) {
      expect(chunk.tokens).toBeLessThanOrEqual(10);
      // No lone half of a surrogate pair at either end.
      expect(chunk.text).not.toMatch(/^[\uDC00-\uDFFF]|[\uD800-\uDBFF]$/);
    }
    expect(chunks.map((chunk) => chunk.text).join('')).toBe(text);
  });

  it('does bounded work on a 10 MB document: each character is counted a few times at most', () => {
    const sentence = 'The quick brown fox jumps over the lazy dog near the river bank. ';
    const text = `${sentence.repeat(8)}\n`.repeat(Math.ceil(10_000_000 / (sentence.length * 8 + 1)));
    expect(text.length).toBeGreaterThanOrEqual(10_000_000);
    let counted = 0;
    const chunks = splitText(text, {
      chunkTokens: 256,
      overlapTokens: 32,
      countTokens: (piece) => {
        counted += piece.length;
        return Math.ceil(piece.length / 4);
      },
    });
    expect(counted).toBeLessThanOrEqual(text.length * 5);
    expect(chunks.length).toBeGreaterThan(10_000_000 / 4 / 256);
    expect(chunks.every((chunk) => chunk.tokens <= 256)).toBe(true);
  });

  it('refuses bad options', () => {
    expect(() => splitText('x', { chunkTokens: 0 })).toThrow(ConfigurationError);
    expect(() => splitText('x', { chunkTokens: 10, overlapTokens: 10 })).toThrow(/less than chunkTokens/);
    expect(() => splitText(42 as never, { chunkTokens: 10 })).toThrow(ValidationError);
    expect(splitText('   \n\n  ', { chunkTokens: 10 })).toEqual([]);
  });
});

describe('ingest and retrievalTool', () => {
  const manual = [
    'Installing the pump. Bolt the pump to a level concrete base and connect the inlet pipe.',
    'Priming. Fill the pump casing with water through the priming plug before the first start.',
    'Maintenance. Replace the mechanical seal every two years or when water drips from the shaft.',
  ].join('\n\n');
  const recipes = 'Pancakes. Whisk flour, eggs and milk, rest the batter, and fry thin pancakes in butter.';

  const setUp = async () => {
    const embedder = new HashEmbedder({ dimensions: 256 });
    const store = new MemoryVectorStore({
      dimensions: 256,
      fields: { documentId: 'string', source: 'string' },
    });
    const result = await ingest(
      [
        { id: 'manual', text: manual, metadata: { source: 'pump-manual.pdf', lang: 'en' } },
        { id: 'recipes', text: recipes },
      ],
      { embedder, store, chunkTokens: 30, overlapTokens: 0 },
    );
    return { embedder, store, result };
  };

  it('splits, embeds and stores chunks with their source and place', async () => {
    const { store, result } = await setUp();
    expect(result).toMatchObject({ documents: 2, chunks: 4, removed: 0 });
    expect(result.tokens).toBeGreaterThan(0);
    expect(await store.count({ filter: { documentId: 'manual' } })).toBe(3);
    const [match] = await store.query(
      (await new HashEmbedder({ dimensions: 256 }).embed(['mechanical seal']))[0]!,
      {
        topK: 1,
      },
    );
    expect(match!.id).toBe('manual#2');
    expect(match!.metadata).toMatchObject({
      documentId: 'manual',
      source: 'pump-manual.pdf',
      chunk: 2,
      lang: 'en',
    });
    const { start, end, text } = match!.metadata as { start: number; end: number; text: string };
    expect(manual.slice(start, end)).toBe(text);
  });

  it('replaces a document ingested again, removing the chunks its old version had beyond the new', async () => {
    const { embedder, store } = await setUp();
    const result = await ingest(
      [{ id: 'manual', text: 'Priming. Open the priming plug and fill the casing.' }],
      {
        embedder,
        store,
        chunkTokens: 30,
      },
    );
    expect(result).toMatchObject({ chunks: 1, removed: 2 });
    expect(await store.count({ filter: { documentId: 'manual' } })).toBe(1);
    expect(await store.count()).toBe(2);
  });

  it('ingests a 10 MB document, and an embedding failure midway leaves the old version whole', async () => {
    const { store } = await setUp();
    const sentence = 'Check the pump seal and the priming plug before every start of the season. ';
    const big = `${sentence.repeat(10)}\n\n`.repeat(Math.ceil(10_000_000 / (sentence.length * 10 + 2)));
    expect(big.length).toBeGreaterThanOrEqual(10_000_000);
    // An embedder that fails on its third request: the big document's chunks take several.
    const failing = new HashEmbedder({ dimensions: 256 });
    let requests = 0;
    const flaky = {
      dimensions: 256,
      embed: async (texts: readonly string[]) => {
        const vectors: number[][] = [];
        for (let start = 0; start < texts.length; start += 1000) {
          if (++requests === 3) throw new Error('the embedding server went away');
          vectors.push(...(await failing.embed(texts.slice(start, start + 1000))));
        }
        return vectors;
      },
    };
    await expect(
      ingest([{ id: 'manual', text: big }], { embedder: flaky, store, chunkTokens: 400 }),
    ).rejects.toThrow('the embedding server went away');
    // The manual is still its old version: three chunks, none of the new text.
    expect(await store.count({ filter: { documentId: 'manual' } })).toBe(3);
    expect(await store.count()).toBe(4);
    const result = await ingest([{ id: 'manual', text: big }], {
      embedder: failing,
      store,
      chunkTokens: 400,
    });
    expect(result.chunks).toBeGreaterThan(10_000_000 / 4 / 400);
    expect(await store.count({ filter: { documentId: 'manual' } })).toBe(result.chunks);
  }, 60_000);

  it('checks every document before writing anything', async () => {
    const { embedder, store } = await setUp();
    const bad = [
      [
        { id: 'new', text: 'fine' },
        { id: 'empty', text: '  ' },
      ],
      [
        { id: 'new', text: 'fine' },
        { id: 'new', text: 'twice' },
      ],
      [{ id: '', text: 'no id' }],
    ];
    for (const documents of bad) {
      await expect(ingest(documents, { embedder, store })).rejects.toBeInstanceOf(ValidationError);
    }
    expect(await store.count()).toBe(4);
    await expect(
      ingest([{ id: 'x', text: 'y' }], { embedder: new HashEmbedder({ dimensions: 8 }), store }),
    ).rejects.toThrow(/vectors of 8 dimensions, but the store holds 256/);
  });

  it('gives the model numbered passages citing their sources, and says when nothing matches', async () => {
    const { embedder, store } = await setUp();
    const search = retrievalTool({ embedder, store, topK: 2 });
    const found = await search.call({ query: 'how do I prime the pump casing with water' });
    expect(found.state).toBe(ActionStatusCode.SUCCESS);
    const text = String(found.result?.[0]?.content);
    expect(text).toMatch(
      /^\[1\] pump-manual\.pdf, chunk 1 \(score 0\.\d\d\)\nPriming\. Fill the pump casing/,
    );
    expect(text).toContain('[2] ');
    const empty = await retrievalTool({ embedder, store, namespace: 'nobody' }).call({ query: 'pump' });
    expect(String(empty.result?.[0]?.content)).toBe('No passages found for "pump".');
    const refused = await search.call({ query: '   ' });
    expect(refused.state).toBe(ActionStatusCode.ARGS_ERROR);
    expect(() => retrievalTool({ embedder: new HashEmbedder({ dimensions: 8 }), store })).toThrow(
      /8 dimensions/,
    );
  });

  it('searches the namespace a function of the call picks', async () => {
    const embedder = new HashEmbedder({ dimensions: 64 });
    const store = new MemoryVectorStore({ dimensions: 64 });
    await ingest([{ id: 'notes', text: 'Alice keeps her bicycle in the garage.' }], {
      embedder,
      store,
      namespace: 'user-alice',
    });
    const search = retrievalTool({ embedder, store, namespace: (context) => `user-${context.sessionId}` });
    const alice = await search.call({ query: 'bicycle' }, 'run', { sessionId: 'alice' });
    const bob = await search.call({ query: 'bicycle' }, 'run', { sessionId: 'bob' });
    expect(String(alice.result?.[0]?.content)).toContain('garage');
    expect(String(bob.result?.[0]?.content)).toContain('No passages found');
  });
});
