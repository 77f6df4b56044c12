import {
  type AgentMessage,
  AsyncFunctionCallingAgent,
  AsyncGPTAPI,
  AsyncStreamingFunctionCallingAgent,
  asyncTool,
  type ChatMessage,
  FunctionCallingAgent,
  StreamingFunctionCallingAgent,
} from 'lagent-ts';
import { AsyncMockLLM, MockLLM, startFakeOpenAI } from 'lagent-ts/testing';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { Held } from '../../helpers/held';
import { calculator, weather } from '../../helpers/tools';

/** Every assistant tool call is answered exactly once, right after it; no tool message without its call. */
function isValidOpenAIHistory(messages: readonly ChatMessage[]): boolean {
  let pending = new Set<string>();
  for (const message of messages) {
    if (message.role === 'tool') {
      if (!message.toolCallId || !pending.has(message.toolCallId)) return false;
      pending.delete(message.toolCallId);
      continue;
    }
    if (pending.size > 0) return false;
    if (message.role === 'assistant' && message.toolCalls)
      pending = new Set(message.toolCalls.map((call) => call.id));
  }
  return pending.size === 0;
}

describe('FunctionCallingAgent on a scripted model', () => {
  it('loops model -> tools -> model and answers; the tool turns are in memory as OpenAI messages', () => {
    const llm = new MockLLM({
      responses: [
        {
          toolCalls: [
            { name: 'Weather', arguments: { city: 'Paris' } },
            { name: 'Calculator__add', arguments: { a: 1, b: 2 } },
          ],
        },
        'Sunny, and 3.',
      ],
    });
    const agent = new FunctionCallingAgent({ llm, actions: [weather, calculator], template: 'Be brief.' });
    const reply = agent.call('Weather in Paris, and 1 + 2?');
    expect(reply.content).toBe('Sunny, and 3.');
    // The tools were offered natively, toolkit APIs as Name__api.
    expect(llm.calls[0]!.tools?.map((t) => t.function.name)).toEqual(['Weather', 'Calculator__add']);
    // The second model call saw the calls and one result per call.
    const second = llm.calls[1]!.messages;
    expect(second.map((m) => m.role)).toEqual(['system', 'user', 'assistant', 'tool', 'tool']);
    expect(second[3]).toMatchObject({ role: 'tool', toolCallId: 'call_1', content: 'Sunny in Paris' });
    expect(second[4]).toMatchObject({ role: 'tool', toolCallId: 'call_2', content: '3' });
    expect(isValidOpenAIHistory(second)).toBe(true);
    expect(Object.keys(agent.stateDict())).toEqual(['memory', 'agent.memory']);
    expect(agent.memory!.getMemory().map((m) => m.content)).toEqual([
      'Weather in Paris, and 1 + 2?',
      'Sunny, and 3.',
    ]);
    expect(agent.agent.memory!.getMemory()).toHaveLength(4);
  });

  it('offers the tools the executor has at each call, also after one is added or removed', () => {
    const llm = new MockLLM({ responses: () => 'ok' });
    const agent = new FunctionCallingAgent({ llm, actions: [weather] });
    agent.call('one');
    agent.executor.set(calculator);
    agent.call('two');
    agent.executor.delete('Weather');
    agent.call('three');
    expect(llm.calls.map((call) => call.tools?.map((t) => t.function.name))).toEqual([
      ['Weather'],
      ['Weather', 'Calculator__add'],
      ['Calculator__add'],
    ]);
  });

  it('answers invalid arguments and unknown tools as error results the model reads, never a throw', () => {
    const llm = new MockLLM({
      responses: [
        {
          toolCalls: [
            { name: 'Weather', arguments: { town: 'Paris' } },
            { name: 'Teleport', arguments: {} },
            { name: 'Weather', arguments: 'not json' },
          ],
        },
        'Sorry.',
      ],
    });
    const agent = new FunctionCallingAgent({ llm, actions: [weather] });
    expect(agent.call('go').content).toBe('Sorry.');
    const results = llm.calls[1]!.messages.filter((m) => m.role === 'tool').map((m) => m.content ?? '');
    expect(results).toHaveLength(3);
    expect(results[0]).toMatch(/city/);
    expect(results[1]).toMatch(/Teleport/);
    expect(results[2]).toMatch(/JSON|object/i);
  });

  it('stops at maxTurn, says so, and leaves a history that is still valid for the next call', () => {
    const call = { toolCalls: [{ name: 'Weather', arguments: { city: 'Rome' } }] };
    const llm = new MockLLM({ responses: [call, call, 'Finally.'] });
    const agent = new FunctionCallingAgent({ llm, actions: [weather], maxTurn: 2 });
    const reply = agent.call('loop');
    expect(reply.content).toMatch(/stopped after 2 model turns.*Weather/);
    expect(reply.extraInfo).toEqual({ maxTurnReached: true, maxTurn: 2 });
    expect(agent.call('and now?').content).toBe('Finally.');
    expect(isValidOpenAIHistory(llm.calls[2]!.messages)).toBe(true);
  });

  it('keeps sessions apart and survives stateDict / loadStateDict with a valid history', async () => {
    let n = 0;
    const llm = new AsyncMockLLM({
      responses: (messages) =>
        messages.at(-1)?.role === 'tool'
          ? `done ${++n}`
          : { toolCalls: [{ name: 'Weather', arguments: { city: 'Oslo' } }] },
    });
    const agent = new AsyncFunctionCallingAgent({ llm, actions: [weather] });
    await Promise.all([agent.call('a', { sessionId: 1 }), agent.call('b', { sessionId: 2 })]);
    const saved = JSON.parse(JSON.stringify(agent.stateDict(1)));
    const restored = new AsyncFunctionCallingAgent({ llm, actions: [weather] });
    restored.loadStateDict(saved, 1);
    await restored.call('again', { sessionId: 1 });
    const last = llm.calls.at(-1)!.messages;
    expect(isValidOpenAIHistory(last)).toBe(true);
    expect(last.filter((m) => m.role === 'user').map((m) => m.content)).toEqual(['a', 'again']);
    expect(agent.agent.memory!.getMemory(2).map((m) => m.sender)).not.toContain(undefined);
    expect(agent.agent.memory!.getMemory(2)[0]!.content).toBe('b');
  });

  it('streams the model text, the tool round (PLUGIN_END, PLUGIN_RETURN), then the final message once', async () => {
    const llm = new AsyncMockLLM({
      responses: [{ toolCalls: [{ name: 'Weather', arguments: { city: 'Lima' } }] }, 'It is sunny in Lima.'],
      chunkSize: 5,
    });
    const agent = new AsyncStreamingFunctionCallingAgent({ llm, actions: [weather] });
    const chunks: AgentMessage[] = [];
    for await (const chunk of agent.call('weather?')) chunks.push(chunk);
    const final = chunks.at(-1)!;
    expect(final.content).toBe('It is sunny in Lima.');
    expect(final.streamState).toBe(0);
    // The tool round is two chunks (see streaming-tools.test.ts); everything else is the model's text.
    expect(chunks.slice(0, 2).map((chunk) => chunk.streamState)).toEqual([4, 5]);
    expect(chunks.slice(2, -1).every((chunk) => chunk.streamState === 1)).toBe(true);
    expect(chunks.filter((chunk) => chunk.streamState === 0)).toHaveLength(1);
    expect(chunks.map((chunk) => chunk.delta ?? '').join('')).toContain('It is sunny in Lima.');
    const sync = new StreamingFunctionCallingAgent({
      llm: new MockLLM({
        responses: [{ toolCalls: [{ name: 'Weather', arguments: { city: 'Oslo' } }] }, 'Cold.'],
      }),
      actions: [weather],
    });
    const syncChunks = [...sync.call('weather?')];
    expect(syncChunks.at(-1)!.content).toBe('Cold.');
  });
});

describe('FunctionCallingAgent against the fake OpenAI server', () => {
  it('runs two tools of one turn in parallel, over real HTTP with streamed-in arguments', async () => {
    // Each tool answers only when the test releases it (or its signal aborts).
    const held = new Held();
    const gated = (name: string) =>
      asyncTool({
        name,
        description: `${name} answers when released`,
        parameters: z.object({ x: z.number() }),
        run: ({ x }, { signal }) => held.wait(`${name}:${x}`, signal),
      });
    const server = await startFakeOpenAI({
      script: [
        {
          toolCalls: [
            { name: 'First', arguments: { x: 1 } },
            { name: 'Second', arguments: { x: 2 } },
          ],
        },
        'Both done.',
      ],
    });
    try {
      const llm = new AsyncGPTAPI({ model: 'm', baseURL: server.baseURL, apiKey: 'k' });
      const agent = new AsyncFunctionCallingAgent({ llm, actions: [gated('First'), gated('Second')] });
      const call = agent.call('run both');
      // One after another, the second would start only once the first answered.
      await held.until(2);
      held.release();
      const reply = await call;
      expect(reply.content).toBe('Both done.');
      const second = server.requests[1]!.body as {
        messages: { role: string; tool_call_id?: string; content: string }[];
      };
      expect(second.messages.filter((m) => m.role === 'tool').map((m) => m.content)).toEqual([
        'First:1',
        'Second:2',
      ]);

      // Abort during the tools stops them and stores nothing.
      server.setScript([{ toolCalls: [{ name: 'First', arguments: { x: 3 } }] }]);
      const before = agent.stateDict(9);
      const controller = new AbortController();
      const aborted = agent.call('abort me', { sessionId: 9, signal: controller.signal });
      await held.until(1);
      controller.abort(new Error('stop the tools'));
      await expect(aborted).rejects.toThrow('stop the tools');
      expect(held.pending).toBe(0);
      expect(agent.stateDict(9)).toEqual(before);
    } finally {
      await server.close();
    }
  });
});
