import type { StreamChunk } from 'lagent-ts';
import {
  AsyncAISDKModel,
  AsyncFunctionCallingAgent,
  asyncTool,
  ConfigurationError,
  LLMRequestError,
  ModelStatusCode,
} from 'lagent-ts';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { scriptedModel } from './ai-sdk-scripted-model';

const user = (content: string) => [{ role: 'user', content }];

async function collect(stream: AsyncIterable<StreamChunk>): Promise<StreamChunk[]> {
  const chunks: StreamChunk[] = [];
  for await (const chunk of stream) chunks.push(chunk);
  return chunks;
}

describe('AsyncAISDKModel', () => {
  it('refuses what is not an AI SDK language model, and specifications it does not know', () => {
    expect(() => new AsyncAISDKModel({ model: {} as never })).toThrow(ConfigurationError);
    expect(
      () => new AsyncAISDKModel({ model: { ...scriptedModel([]), specificationVersion: 'v1' } as never }),
    ).toThrow(/specification v1 is not supported/);
  });

  it('reads v2 models (flat usage, string finish reasons) as it reads v4 ones', async () => {
    for (const version of ['v2', 'v4'] as const) {
      const model = scriptedModel(
        [
          {
            toolCalls: [{ id: 't1', name: 'Maps__distance', input: { to: 'B' } }],
            usage: { input: 4, output: 2 },
          },
          { text: 'hello world', usage: { input: 3, output: 1 } },
        ],
        version,
      );
      const llm = new AsyncAISDKModel({ model });
      const reply = await llm.generate(user('go'), {
        tools: [{ type: 'function', function: { name: 'Maps.distance', description: 'd', parameters: {} } }],
      });
      expect(reply).toEqual({
        usage: { promptTokens: 4, completionTokens: 2, totalTokens: 6 },
        content: '',
        toolCalls: [{ id: 't1', name: 'Maps.distance', arguments: { to: 'B' } }],
        finishReason: 'tool_calls',
      });
      const chunks = await collect(llm.streamChat(user('again')));
      expect(chunks.at(-1)).toMatchObject({ state: ModelStatusCode.END, content: 'hello world' });
      expect(llm.getUsage()).toEqual({ promptTokens: 7, completionTokens: 3, totalTokens: 10 });
      expect(llm.describe()).toEqual({ model: 'scripted-model', baseURL: 'scripted' });
    }
  });

  it('maps params: maxNewTokens, temperature, stop words (blank ones cut only here), topP/topK only when set', async () => {
    const model = scriptedModel(() => ({ text: 'ok' }));
    const llm = new AsyncAISDKModel({ model, maxNewTokens: 64, temperature: 0.3, stopWords: [' ', 'END'] });
    await llm.chat(user('a'));
    await llm.chat(user('b'), { topP: 0.5, toolChoice: 'required' });
    expect(model.calls[0]).toMatchObject({ maxOutputTokens: 64, temperature: 0.3, stopSequences: ['END'] });
    expect(model.calls[0]).not.toHaveProperty('topP');
    expect(model.calls[0]).not.toHaveProperty('topK');
    expect(model.calls[1]?.topP).toBe(0.5);
    expect(model.calls[1]).not.toHaveProperty('toolChoice'); // no tools offered
  });

  it('runs a function-calling agent end to end: the model calls a tool, sees its result, answers', async () => {
    const weather = asyncTool({
      name: 'weather',
      description: 'The weather in a city.',
      parameters: z.object({ city: z.string() }),
      run: async ({ city }) => `sunny in ${city}`,
    });
    const model = scriptedModel((options) => {
      const last = options.prompt.at(-1);
      if (last?.role === 'tool') {
        const result = last.content[0];
        return { text: `The tool said: ${result?.output.value}` };
      }
      return { toolCalls: [{ id: 'w1', name: 'weather', input: { city: 'Paris' } }] };
    });
    const agent = new AsyncFunctionCallingAgent({ llm: new AsyncAISDKModel({ model }), actions: [weather] });
    const reply = await agent.call('Weather in Paris?');
    expect(reply.content).toBe('The tool said: sunny in Paris');
    expect(model.calls).toHaveLength(2);
    expect(model.calls[0]?.tools?.map((tool) => tool.name)).toEqual(['weather']);
    const second = model.calls[1]!.prompt;
    expect(second.at(-2)).toEqual({
      role: 'assistant',
      content: [{ type: 'tool-call', toolCallId: 'w1', toolName: 'weather', input: { city: 'Paris' } }],
    });
    expect(second.at(-1)).toMatchObject({
      role: 'tool',
      content: [{ type: 'tool-result', toolCallId: 'w1', toolName: 'weather' }],
    });
  });

  it('stops at a timeout and retries it, then fails with LLMRequestError', async () => {
    let calls = 0;
    const model = {
      ...scriptedModel([]),
      doGenerate: (options: { abortSignal?: AbortSignal }) =>
        new Promise<never>((_, reject) => {
          calls++;
          options.abortSignal?.addEventListener('abort', () => reject(options.abortSignal?.reason));
        }),
    };
    const llm = new AsyncAISDKModel({ model, timeout: 30, retry: 1, retryMinDelayMs: 1 });
    const error = await llm.chat(user('hi')).catch((failure: unknown) => failure);
    expect(error).toBeInstanceOf(LLMRequestError);
    expect(error).toMatchObject({ retryable: true, attempts: 2 });
    expect((error as Error).message).toMatch(/timed out/);
    expect(calls).toBe(2);
  });
});
