import type { StreamChunk } from 'lagent-ts';
import { AsyncLMDeployServer, AsyncVllmModel, INTERNLM2_META, ModelStatusCode } from 'lagent-ts';
import { type FakeOpenAIServer, startFakeOpenAI } from 'lagent-ts/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const dialog = [
  { role: 'system', content: 'sys' },
  { role: 'user', content: 'hi' },
];
const prompt = '<|im_start|>system\nsys<|im_end|>\n<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n';

let server: FakeOpenAIServer;
beforeAll(async () => {
  server = await startFakeOpenAI();
});
afterAll(() => server.close());

describe('AsyncVllmModel', () => {
  it('renders the meta template into a raw prompt for /v1/completions', async () => {
    server.setScript({ content: 'Hello<|im_end|>junk', ignoreStop: true });
    const llm = new AsyncVllmModel({
      model: 'internlm2',
      baseURL: server.baseURL,
      metaTemplate: INTERNLM2_META,
      stopWords: ['<|im_end|>'],
      topK: 20,
      repetitionPenalty: 1.05,
    });
    expect(await llm.chat(dialog)).toBe('Hello');
    const request = server.requests.at(-1);
    expect(request?.path).toBe('/v1/completions');
    expect(request?.headers.authorization).toBe('Bearer EMPTY');
    expect(request?.body).toEqual({
      model: 'internlm2',
      prompt,
      max_tokens: 512,
      temperature: 0.8,
      top_p: 0.8,
      top_k: 20,
      repetition_penalty: 1.05,
      stop: ['<|im_end|>'],
      skip_special_tokens: false,
    });
  });

  it('streams completions with stop words cut client-side', async () => {
    server.setScript({ content: 'streamed<|im_end|>junk', ignoreStop: true, chunkSize: 3 });
    const llm = new AsyncVllmModel({
      model: 'm',
      baseURL: server.baseURL,
      metaTemplate: INTERNLM2_META,
      stopWords: ['<|im_end|>'],
    });
    const chunks: StreamChunk[] = [];
    for await (const chunk of llm.streamChat(dialog)) chunks.push(chunk);
    expect(chunks.at(-1)).toEqual({ state: ModelStatusCode.END, content: 'streamed', delta: '' });
    expect(server.requests.at(-1)?.body.stream).toBe(true);
  });

  it('uses /v1/chat/completions without a meta template', async () => {
    server.setScript('chat reply');
    const llm = new AsyncLMDeployServer({ model: 'internlm2', baseURL: server.baseURL });
    expect(await llm.chat([...dialog, { role: 'environment', content: 'r', name: 'plugin' }])).toBe(
      'chat reply',
    );
    const request = server.requests.at(-1);
    expect(request?.path).toBe('/v1/chat/completions');
    expect(request?.body.messages).toEqual([
      { role: 'system', content: 'sys' },
      { role: 'user', content: 'hi' },
      { role: 'system', content: 'r', name: 'plugin' },
    ]);
    expect(request?.body).toMatchObject({ top_k: 40, repetition_penalty: 1 });
  });

  it('defaults to the servers usual local addresses', () => {
    expect(new AsyncVllmModel({ model: 'm' }).baseURL).toBe('http://127.0.0.1:8000/v1');
    expect(new AsyncLMDeployServer({ model: 'm' }).baseURL).toBe('http://127.0.0.1:23333/v1');
  });
});
