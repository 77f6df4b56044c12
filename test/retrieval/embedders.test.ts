import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { LLMRequestError, ValidationError } from 'lagent-ts';
import type { EmbeddingUsage } from 'lagent-ts/retrieval';
import { AISDKEmbedder, OpenAIEmbedder } from 'lagent-ts/retrieval';
import type { FakeEmbeddingsReply, FakeOpenAIServer } from 'lagent-ts/testing';
import { HashEmbedder, startFakeOpenAI } from 'lagent-ts/testing';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { cosine } from './vector-store-contract';

let server: FakeOpenAIServer;
/** This test's script: `index` counts the embeddings requests since the test began. */
let script: ((body: any, index: number) => FakeEmbeddingsReply | undefined) | undefined;
let received = 0;
beforeAll(async () => {
  server = await startFakeOpenAI({
    embeddings: { dimensions: 32, script: (body) => script?.(body, received++) },
  });
});
afterAll(() => server.close());
beforeEach(() => {
  script = undefined;
  received = 0;
  server.requests.length = 0;
});

const embeddingRequests = () => server.requests.filter((request) => request.path === '/v1/embeddings');
const texts = (count: number) =>
  Array.from({ length: count }, (_, index) => `text number ${index} about topic ${index % 7}`);
const fast = { retryMinDelayMs: 1, retryMaxDelayMs: 5 };

describe('HashEmbedder', () => {
  it('is deterministic, and texts sharing words are nearer than texts sharing none', async () => {
    const embedder = new HashEmbedder({ dimensions: 128 });
    const [cat, kitten, car, again] = await embedder.embed([
      'the cat sat on the mat',
      'the cat slept on the mat',
      'red sports car engine',
      'the cat sat on the mat',
    ]);
    expect(again).toEqual(cat);
    expect(cat).toHaveLength(128);
    expect(cosine(cat!, cat!)).toBeCloseTo(1, 10);
    expect(cosine(cat!, kitten!)).toBeGreaterThan(0.5);
    expect(Math.abs(cosine(cat!, car!))).toBeLessThan(0.3);
    expect(await new HashEmbedder({ dimensions: 128 }).embed(['the cat sat on the mat'])).toEqual([cat]);
    // Text without letters or digits still has a direction.
    expect((await embedder.embed(['?!'])).at(0)?.some((value) => value !== 0)).toBe(true);
  });

  it('refuses empty texts and counts usage', async () => {
    const embedder = new HashEmbedder({ dimensions: 8 });
    await expect(embedder.embed(['fine', '  '])).rejects.toThrow(/texts\[1\] is empty/);
    const seen: EmbeddingUsage[] = [];
    await embedder.embed(['abcdefgh'], { onUsage: (usage) => seen.push(usage) });
    expect(seen).toEqual([{ tokens: 2 }]);
    expect(embedder.usage).toEqual({ tokens: 2, texts: 1 });
  });
});

describe('OpenAIEmbedder', () => {
  const embedder = (options: Partial<ConstructorParameters<typeof OpenAIEmbedder>[0]> = {}) =>
    new OpenAIEmbedder({
      model: 'local-model',
      baseURL: server.baseURL,
      apiKey: 'sk-test',
      dimensions: 32,
      ...fast,
      ...options,
    });

  it('embeds in batches, in order, with the vectors the server computes, and reports usage per request', async () => {
    const client = embedder({ batchSize: 50, maxParallel: 3 });
    const inputs = texts(120);
    const seen: EmbeddingUsage[] = [];
    const vectors = await client.embed(inputs, { onUsage: (usage) => seen.push(usage) });
    const reference = new HashEmbedder({ dimensions: 32 });
    expect(vectors).toHaveLength(120);
    for (const [index, vector] of vectors.entries()) {
      expect(vector).toEqual(reference.vectorOf(inputs[index]!));
    }
    const requests = embeddingRequests();
    expect(requests.map((request) => request.body.input.length).sort()).toEqual([20, 50, 50]);
    expect(requests.every((request) => request.headers.authorization === 'Bearer sk-test')).toBe(true);
    expect(requests[0]!.body).toMatchObject({ model: 'local-model', encoding_format: 'float' });
    expect(requests[0]!.body.dimensions).toBeUndefined();
    expect(seen).toHaveLength(3);
    expect(client.usage.tokens).toBe(seen.reduce((sum, usage) => sum + usage.tokens, 0));
    expect(client.usage.requests).toBe(3);
    expect(await client.embed([])).toEqual([]);
  });

  it('asks OpenAI text-embedding-3 models for shorter vectors, and knows their default lengths', async () => {
    expect(new OpenAIEmbedder({ model: 'text-embedding-3-large', apiKey: 'k' }).dimensions).toBe(3072);
    expect(() => new OpenAIEmbedder({ model: 'mystery', apiKey: 'k' })).toThrow(/pass dimensions/);
    await embedder({ model: 'text-embedding-3-small' }).embed(['hello']);
    expect(embeddingRequests()[0]!.body.dimensions).toBe(32);
  });

  it('retries a 429 after the server asks, and a dropped connection', async () => {
    script = (_body, index) =>
      index === 0
        ? { status: 429, headers: { 'retry-after-ms': '1' } }
        : index === 1
          ? { destroy: true }
          : undefined;
    const client = embedder();
    expect(await client.embed(['hello'])).toHaveLength(1);
    expect(embeddingRequests()).toHaveLength(3);
    expect(client.usage.requests).toBe(3);
  });

  it('fails with an LLMRequestError on a 400, on vectors of another length and after its retries', async () => {
    script = () => ({ status: 400, error: { message: 'bad model', type: 'invalid_request_error' } });
    await expect(embedder().embed(['hello'])).rejects.toThrow(/failed with status 400: bad model/);
    script = () => ({ vectors: [[1, 2, 3]] });
    const wrong = await embedder()
      .embed(['hello'])
      .catch((error: unknown) => error);
    expect(wrong).toBeInstanceOf(LLMRequestError);
    expect((wrong as Error).message).toMatch(/sent vectors of 3 dimensions, not 32: set dimensions/);
    script = () => ({ status: 503 });
    await expect(embedder({ retry: 2 }).embed(['hello'])).rejects.toThrow(/gave up after 3 attempts/);
  });

  it('refuses empty texts before sending anything', async () => {
    await expect(embedder().embed(['ok', ''])).rejects.toBeInstanceOf(ValidationError);
    await expect(embedder().embed('text' as never)).rejects.toBeInstanceOf(ValidationError);
    expect(embeddingRequests()).toHaveLength(0);
  });

  it('stops every batch in flight when its signal aborts, and when one batch fails for good', async () => {
    script = () => ({ delayMs: 60_000 });
    const controller = new AbortController();
    const pending = embedder({ batchSize: 1, maxParallel: 2 }).embed(['a', 'b', 'c'], {
      signal: controller.signal,
    });
    await expect.poll(() => embeddingRequests().length).toBe(2);
    controller.abort(new Error('user left'));
    await expect(pending).rejects.toThrow('user left');
    expect(embeddingRequests()).toHaveLength(2);

    script = (body) => (body.input[0] === 'bad' ? { status: 400 } : { delayMs: 60_000 });
    server.requests.length = 0;
    await expect(embedder({ batchSize: 1, maxParallel: 2 }).embed(['slow', 'bad', 'never'])).rejects.toThrow(
      /status 400/,
    );
    expect(embeddingRequests().map((request) => request.body.input[0])).toEqual(['slow', 'bad']);
  });
});

describe('AISDKEmbedder', () => {
  const provider = () => createOpenAICompatible({ name: 'fake', baseURL: server.baseURL, apiKey: 'sk-test' });

  it('embeds through an AI SDK embedding model, in batches of at most the model allows', async () => {
    const model = provider().embeddingModel('local-model');
    const limited = {
      specificationVersion: model.specificationVersion,
      provider: model.provider,
      modelId: model.modelId,
      maxEmbeddingsPerCall: 4,
      supportsParallelCalls: true,
      doEmbed: (options: { values: string[]; abortSignal?: AbortSignal }) => model.doEmbed(options),
    };
    const embedder = new AISDKEmbedder({ model: limited, dimensions: 32, batchSize: 100, ...fast });
    const inputs = texts(10);
    const seen: EmbeddingUsage[] = [];
    const vectors = await embedder.embed(inputs, { onUsage: (usage) => seen.push(usage) });
    const reference = new HashEmbedder({ dimensions: 32 });
    for (const [index, vector] of vectors.entries()) {
      expect(cosine(vector, reference.vectorOf(inputs[index]!))).toBeCloseTo(1, 5);
    }
    expect(
      embeddingRequests()
        .map((request) => request.body.input.length)
        .sort(),
    ).toEqual([2, 4, 4]);
    expect(seen).toHaveLength(3);
    expect(embedder.usage.requests).toBe(3);
  });

  it('retries what the provider marks retryable, and refuses vectors of another length', async () => {
    script = (_body, index) => (index === 0 ? { status: 500 } : undefined);
    const embedder = new AISDKEmbedder({ model: provider().embeddingModel('m'), dimensions: 32, ...fast });
    expect(await embedder.embed(['hello'])).toHaveLength(1);
    expect(embeddingRequests()).toHaveLength(2);
    const wrong = new AISDKEmbedder({ model: provider().embeddingModel('m'), dimensions: 16, ...fast });
    await expect(wrong.embed(['hello'])).rejects.toThrow(/gave vectors of 32 dimensions, not 16/);
    await expect(wrong.embed([' '])).rejects.toBeInstanceOf(ValidationError);
  });
});
