import {
  type ActionReturn,
  type AgentMessage,
  AsyncClaudeAPI,
  AsyncFunctionCallingAgent,
  AsyncStreamingFunctionCallingAgent,
  ClaudeAPI,
  FunctionCallingAgent,
  LLMRequestError,
  ModelStatusCode,
} from 'lagent-ts';
import { startFakeAnthropic, startFakeAnthropicWorker } from 'lagent-ts/testing';
import { describe, expect, it } from 'vitest';
import { asyncAdd, calculator, weather } from '../../helpers/tools';

// The request bodies below are checked whole: the clients send no prompt-caching marks (cache: false).
describe('AsyncClaudeAPI in the function-calling agents', () => {
  it('loops model -> tools -> model with real tools; the second request carries tool_use and tool_result blocks', async () => {
    const server = await startFakeAnthropic({
      script: [
        {
          content: 'Let me check.',
          toolCalls: [
            { id: 'toolu_w', name: 'Weather', arguments: { city: 'Paris' } },
            { id: 'toolu_c', name: 'Calculator__add', arguments: { a: 1, b: 2 } },
          ],
        },
        'Sunny, and 3.',
      ],
    });
    try {
      const llm = new AsyncClaudeAPI({
        model: 'claude-test',
        apiKey: 'k',
        baseURL: server.baseURL,
        cache: false,
      });
      const agent = new AsyncFunctionCallingAgent({
        llm,
        actions: [weather, calculator],
        template: 'Be brief.',
      });
      const reply = await agent.call('Weather in Paris, and 1 + 2?');
      expect(reply.content).toBe('Sunny, and 3.');
      const [first, second] = server.requests.map((request) => request.body);
      expect(first.system).toBe('Be brief.');
      expect(first.tools.map((entry: { name: string }) => entry.name)).toEqual([
        'Weather',
        'Calculator__add',
      ]);
      expect(second.system).toBe('Be brief.');
      expect(second.messages).toEqual([
        { role: 'user', content: 'Weather in Paris, and 1 + 2?' },
        {
          role: 'assistant',
          content: [
            { type: 'text', text: 'Let me check.' },
            { type: 'tool_use', id: 'toolu_w', name: 'Weather', input: { city: 'Paris' } },
            { type: 'tool_use', id: 'toolu_c', name: 'Calculator__add', input: { a: 1, b: 2 } },
          ],
        },
        {
          role: 'user',
          content: [
            { type: 'tool_result', tool_use_id: 'toolu_w', content: 'Sunny in Paris' },
            { type: 'tool_result', tool_use_id: 'toolu_c', content: '3' },
          ],
        },
      ]);
      expect(llm.getTotalUsage().totalTokens).toBeGreaterThan(0);
    } finally {
      await server.close();
    }
  });

  it('streams with AsyncStreamingFunctionCallingAgent (tool calls assembled from input_json_delta)', async () => {
    const server = await startFakeAnthropic({
      script: [
        { chunkSize: 2, toolCalls: [{ name: 'Weather', arguments: { city: 'Lima' } }] },
        { content: 'It is sunny in Lima.', chunkSize: 3 },
      ],
    });
    try {
      const llm = new AsyncClaudeAPI({ apiKey: 'k', baseURL: server.baseURL, cache: false });
      const agent = new AsyncStreamingFunctionCallingAgent({ llm, actions: [weather] });
      const chunks: AgentMessage[] = [];
      for await (const chunk of agent.call('weather?')) chunks.push(chunk);
      expect(chunks.at(-1)!.content).toBe('It is sunny in Lima.');
      expect(server.requests.every((request) => request.stream)).toBe(true);
      const results = server.requests[1]!.body.messages[2].content;
      expect(results).toEqual([{ type: 'tool_result', tool_use_id: 'toolu_1', content: 'Sunny in Lima' }]);
    } finally {
      await server.close();
    }
  });

  it("the agent call's signal aborts the model request it makes", async () => {
    // The server never answers: only the abort ends the call.
    const server = await startFakeAnthropic({ script: { content: 'late', hang: true } });
    try {
      const llm = new AsyncClaudeAPI({ apiKey: 'k', baseURL: server.baseURL, cache: false });
      const agent = new AsyncFunctionCallingAgent({ llm, actions: [weather] });
      const controller = new AbortController();
      const call = agent.call('hi', { signal: controller.signal });
      await expect.poll(() => server.requests.length).toBe(1);
      controller.abort(new Error('the user left'));
      await expect(call).rejects.toThrow('the user left');
      await expect.poll(() => server.requests[0]!.aborted).toBe(true);
    } finally {
      await server.close();
    }
  });

  it('a tool that fails its arguments is answered as an error result the model reads', async () => {
    const server = await startFakeAnthropic({
      script: [{ toolCalls: [{ id: 'toolu_bad', name: 'add', arguments: { a: 'one' } }] }, 'Sorry.'],
    });
    try {
      const llm = new AsyncClaudeAPI({ apiKey: 'k', baseURL: server.baseURL, cache: false });
      const agent = new AsyncFunctionCallingAgent({ llm, actions: [asyncAdd] });
      expect((await agent.call('add')).content).toBe('Sorry.');
      const [result] = server.requests[1]!.body.messages[2].content;
      expect(result.tool_use_id).toBe('toolu_bad');
      expect(result.content).toMatch(/a|b/);
    } finally {
      await server.close();
    }
  });
});

describe('ClaudeAPI (sync, through the bridge) against a server in a worker', () => {
  it('chats, streams, retries a 429 and reports a 401 with its class', () => {
    const server = startFakeAnthropicWorker({
      script: [
        'Hello!',
        { content: 'streamed text', chunkSize: 4 },
        { status: 429, headers: { 'retry-after': '0' } },
        'after 429',
        { status: 401, error: { message: 'invalid x-api-key' } },
      ],
    });
    const llm = new ClaudeAPI({
      model: 'claude-test',
      apiKey: 'k',
      baseURL: server.baseURL,
      retry: 1,
      cache: false,
    });
    try {
      expect(
        llm.chat([
          { role: 'system', content: 'S' },
          { role: 'user', content: 'hi' },
        ]),
      ).toBe('Hello!');
      const chunks = [...llm.streamChat([{ role: 'user', content: 'go' }])];
      expect(chunks.at(-1)).toEqual({ state: ModelStatusCode.END, content: 'streamed text', delta: '' });
      expect(llm.chat([{ role: 'user', content: 'again' }])).toBe('after 429');
      expect(() => llm.chat([{ role: 'user', content: 'x' }])).toThrow(LLMRequestError);
      const requests = server.requests();
      expect(requests[0]!.body).toMatchObject({ system: 'S', max_tokens: 4096, model: 'claude-test' });
      expect(requests).toHaveLength(5);
      expect(llm.getTotalUsage().totalTokens).toBeGreaterThan(0);
    } finally {
      llm.close();
      server.close();
    }
  });

  it('runs FunctionCallingAgent with real tools end to end', () => {
    const server = startFakeAnthropicWorker({
      script: [
        { toolCalls: [{ id: 'toolu_7', name: 'Calculator__add', arguments: { a: 2, b: 5 } }] },
        'Seven.',
      ],
    });
    const llm = new ClaudeAPI({ apiKey: 'k', baseURL: server.baseURL, cache: false });
    try {
      const agent = new FunctionCallingAgent({ llm, actions: [calculator] });
      expect(agent.call('2 + 5?').content).toBe('Seven.');
      const results = agent.agent.memory!.getMemory()[2]!.content as ActionReturn[];
      expect(results[0]!.toText()).toBe('7');
      const second = server.requests()[1]!.body;
      expect(second.tools[0].name).toBe('Calculator__add');
      expect(second.messages.at(-1)).toEqual({
        role: 'user',
        content: [{ type: 'tool_result', tool_use_id: 'toolu_7', content: '7' }],
      });
    } finally {
      llm.close();
      server.close();
    }
  });
});

describe('ClaudeAPI countTokensExact (sync)', () => {
  it('asks the count endpoint through the bridge', () => {
    const server = startFakeAnthropicWorker({ script: [] });
    const llm = new ClaudeAPI({ model: 'claude-test', apiKey: 'k', baseURL: server.baseURL, cache: false });
    try {
      const counted = llm.countTokensExact([{ role: 'user', content: 'count me, please' }]);
      expect(counted).toBeGreaterThan(0);
      expect(server.requests().at(-1)?.path).toBe('/v1/messages/count_tokens');
    } finally {
      llm.close();
      server.close();
    }
  });
});
