import type { ChatMessage, OpenAITool } from 'lagent-ts';
import { ModelOutputError, ModelStatusCode } from 'lagent-ts';
import { AsyncMockLLM, MockLLM, MockScriptError } from 'lagent-ts/testing';
import { describe, expect, it } from 'vitest';
import { calculator } from '../helpers/tools';

const user = (content: string): ChatMessage[] => [{ role: 'user', content }];
const search: OpenAITool = {
  type: 'function',
  function: { name: 'search', description: 'Search', parameters: { type: 'object', properties: {} } },
};

describe('MockLLM tool-call scripting', () => {
  it('generate() returns scripted calls with default ids; calls record the tools offered', () => {
    const llm = new MockLLM({
      responses: [
        { content: 'Adding.', toolCalls: [{ name: 'Calculator.add', arguments: { a: 1, b: 2 } }] },
        {
          toolCalls: [
            { name: 'Calculator__add', arguments: '{"a": 3, "b": 4}' },
            { id: 'x', name: 'search', arguments: 'oops' },
          ],
        },
        'The answer is 3.',
      ],
    });
    expect(
      llm.generate(user('1+2'), { tools: [calculator, search], toolChoice: 'auto', parallelToolCalls: true }),
    ).toEqual({
      content: 'Adding.',
      toolCalls: [{ id: 'call_1', name: 'Calculator.add', arguments: { a: 1, b: 2 } }],
      finishReason: 'tool_calls',
    });
    expect(llm.generate(user('again'), { tools: [calculator, search] }).toolCalls).toEqual([
      { id: 'call_2', name: 'Calculator.add', arguments: { a: 3, b: 4 } },
      { id: 'x', name: 'search', arguments: 'oops' },
    ]);
    expect(llm.generate(user('done'))).toEqual({
      content: 'The answer is 3.',
      toolCalls: [],
      finishReason: 'stop',
    });
    llm.assertComplete();
    expect(llm.calls[0]?.tools?.map((entry) => entry.function.name)).toEqual(['Calculator__add', 'search']);
    expect(llm.calls[0]?.toolChoice).toBe('auto');
    expect(llm.calls[0]?.parallelToolCalls).toBe(true);
    expect(llm.calls[2]).not.toHaveProperty('tools');
  });

  it('chat() throws the "answered with tool calls" error instead of returning text', () => {
    const llm = new MockLLM({ responses: () => ({ toolCalls: [{ name: 'search', arguments: {} }] }) });
    expect(() => llm.chat(user('x'))).toThrow(ModelOutputError);
    expect(() => llm.chat(user('x'))).toThrow(
      /MockLLM: the model answered with 1 tool call \(search\).*generate\(\)/,
    );
  });

  it('streamChat() streams the content, then an END chunk carrying the calls', () => {
    const llm = new MockLLM({
      responses: [{ content: 'abcde', toolCalls: [{ id: 'k', name: 'search', arguments: { q: 1 } }] }],
      chunkSize: 3,
    });
    expect([...llm.streamChat(user('x'))]).toEqual([
      { state: ModelStatusCode.STREAM_ING, content: 'abc', delta: 'abc' },
      { state: ModelStatusCode.STREAM_ING, content: 'abcde', delta: 'de' },
      {
        state: ModelStatusCode.END,
        content: 'abcde',
        delta: '',
        toolCalls: [{ id: 'k', name: 'search', arguments: { q: 1 } }],
      },
    ]);
  });

  it('rejects malformed scripted replies clearly', () => {
    const llm = new MockLLM({
      responses: [{ toolCalls: [{ arguments: {} } as never] }, { content: 5 } as never],
    });
    expect(() => llm.generate(user('x'))).toThrow(MockScriptError);
    expect(() => llm.generate(user('x'))).toThrow(/not a string nor a \{ content, toolCalls \} reply/);
  });

  it('the default generate() of any model wraps chat() with no tool calls', async () => {
    const { BaseLLM, AsyncBaseLLM } = await import('#src/llms/base-llm');
    class Plain extends BaseLLM {
      chat() {
        return 'text';
      }
    }
    class AsyncPlain extends AsyncBaseLLM {
      async chat() {
        return 'text';
      }
    }
    expect(new Plain().generate(user('x'))).toEqual({ content: 'text', toolCalls: [] });
    expect(await new AsyncPlain().generate(user('x'))).toEqual({ content: 'text', toolCalls: [] });
  });
});

describe('AsyncMockLLM tool-call scripting', () => {
  it('generate(), chat() and streamChat() behave like the sync mock', async () => {
    const reply = { content: 'hi', toolCalls: [{ name: 'Calculator__add', arguments: { a: 1, b: 1 } }] };
    const llm = new AsyncMockLLM({ responses: [reply, reply, reply], latencyMs: 1 });
    expect((await llm.generate(user('x'), { tools: [calculator] })).toolCalls).toEqual([
      { id: 'call_1', name: 'Calculator.add', arguments: { a: 1, b: 1 } },
    ]);
    await expect(llm.chat(user('x'), { tools: [calculator] })).rejects.toThrow(
      /AsyncMockLLM: the model answered with 1 tool call/,
    );
    const chunks = [];
    for await (const chunk of llm.streamChat(user('x'), { tools: [calculator] })) chunks.push(chunk);
    expect(chunks.at(-1)).toEqual({
      state: ModelStatusCode.END,
      content: 'hi',
      delta: '',
      toolCalls: [{ id: 'call_3', name: 'Calculator.add', arguments: { a: 1, b: 1 } }],
    });
    llm.assertComplete();
  });
});
