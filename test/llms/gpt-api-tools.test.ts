import type { OpenAITool } from 'lagent-ts';
import {
  ConfigurationError,
  GPTAPI,
  INTERNLM2_META,
  ModelOutputError,
  ModelStatusCode,
  VllmModel,
} from 'lagent-ts';
import { type FakeOpenAIWorkerServer, startFakeOpenAIWorker } from 'lagent-ts/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { calculator } from '../helpers/tools';

const user = (content: string) => [{ role: 'user', content }];

// GPTAPI blocks this thread while it waits, so the server runs on another thread.
let server: FakeOpenAIWorkerServer;
let llm: GPTAPI;
beforeAll(() => {
  server = startFakeOpenAIWorker();
  llm = new GPTAPI({ model: 'sync-tools', apiKey: 'sk-sync', baseURL: server.baseURL, retry: 0 });
});
afterAll(() => {
  llm.close();
  server.close();
});

const lastBody = () => server.requests().at(-1)?.body;

describe('GPTAPI tool calling (sync, through the bridge)', () => {
  it('generate() sends action objects as OpenAI tools and returns the calls typed', () => {
    server.setScript([
      { content: 'On it.', toolCalls: [{ id: 'c1', name: 'Calculator__add', arguments: { a: 40, b: 2 } }] },
    ]);
    const reply = llm.generate(user('40+2'), {
      tools: [calculator],
      toolChoice: { name: 'Calculator.add' },
      parallelToolCalls: false,
    });
    expect(reply).toEqual({
      content: 'On it.',
      toolCalls: [{ id: 'c1', name: 'Calculator.add', arguments: { a: 40, b: 2 } }],
      finishReason: 'tool_calls',
      usage: {
        promptTokens: expect.any(Number),
        completionTokens: expect.any(Number),
        totalTokens: expect.any(Number),
      },
    });
    const body = lastBody();
    expect(body.tools.map((entry: OpenAITool) => entry.function.name)).toEqual(['Calculator__add']);
    expect(body.tool_choice).toEqual({ type: 'function', function: { name: 'Calculator__add' } });
    expect(body.parallel_tool_calls).toBe(false);
  });

  it('streamChat() ends with a chunk carrying the assembled calls', () => {
    server.setScript([
      {
        chunkSize: 3,
        interleaveToolCalls: true,
        toolCalls: [
          { id: 'c1', name: 'Calculator__add', arguments: { a: 1, b: 2 } },
          { id: 'c2', name: 'Calculator__add', arguments: '{"a": 3, "b": 4}' },
        ],
      },
    ]);
    const chunks = [...llm.streamChat(user('x'), { tools: [calculator] })];
    expect(chunks).toEqual([
      {
        state: ModelStatusCode.END,
        content: '',
        delta: '',
        toolCalls: [
          { id: 'c1', name: 'Calculator.add', arguments: { a: 1, b: 2 } },
          { id: 'c2', name: 'Calculator.add', arguments: { a: 3, b: 4 } },
        ],
      },
    ]);
  });

  it('chat() throws the tool-call error with its class and the sync client name', () => {
    server.setScript([{ toolCalls: [{ name: 'Calculator__add', arguments: {} }] }]);
    let caught: unknown;
    try {
      llm.chat(user('x'), { tools: [calculator] });
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(ModelOutputError);
    expect((caught as Error).message).toMatch(
      /^GPTAPI: the model answered with 1 tool call \(Calculator\.add\)/,
    );
  });

  it('sends history with tool turns in the wire shape', () => {
    server.setScript(['done']);
    llm.chat([
      { role: 'user', content: 'x' },
      {
        role: 'assistant',
        content: null,
        toolCalls: [{ id: 'c1', name: 'Calculator.add', arguments: { a: 1, b: 2 } }],
      },
      { role: 'tool', content: '3', toolCallId: 'c1' },
    ]);
    expect(lastBody().messages.slice(1)).toEqual([
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          { id: 'c1', type: 'function', function: { name: 'Calculator__add', arguments: '{"a":1,"b":2}' } },
        ],
      },
      { role: 'tool', content: '3', tool_call_id: 'c1' },
    ]);
  });

  it('the sync raw-prompt twin refuses tools with a metaTemplate', () => {
    const raw = new VllmModel({
      model: 'served',
      baseURL: server.baseURL,
      metaTemplate: INTERNLM2_META,
      retry: 0,
    });
    try {
      expect(() => raw.generate(user('x'), { tools: [calculator] })).toThrow(ConfigurationError);
    } finally {
      raw.close();
    }
  });
});
