import {
  ActionReturn,
  ActionStatusCode,
  type AgentMessage,
  AgentStatusCode,
  AsyncClaudeAPI,
  AsyncFunctionCallingAgent,
  AsyncStreamingFunctionCallingAgent,
  asyncTool,
  FunctionCallingAgent,
  StreamingFunctionCallingAgent,
  toolCallsOf,
} from 'lagent-ts';
import { AsyncMockLLM, MockLLM, startFakeAnthropic } from 'lagent-ts/testing';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { weather } from '../../helpers/tools';

/** Tool rounds of the streaming function-calling agents: chunks, turn breaks in `delta`, and events. */

const states = (chunks: readonly AgentMessage[]) => chunks.map((chunk) => chunk.streamState);
const deltas = (chunks: readonly AgentMessage[]) => chunks.map((chunk) => chunk.delta ?? '').join('');

/** Collapses runs of STREAM_ING (1) into one entry, so sequences read as [1, 4, 5, 1, 0]. */
function shape(chunks: readonly AgentMessage[]): number[] {
  return states(chunks).filter((state, at, all) => !(state === 1 && all[at - 1] === 1));
}

describe('AsyncStreamingFunctionCallingAgent', () => {
  it('emits a PLUGIN_END chunk with the calls and a PLUGIN_RETURN chunk with the results; printed deltas show each model turn as a paragraph', async () => {
    const llm = new AsyncMockLLM({
      responses: [
        { content: 'Let me check.', toolCalls: [{ name: 'Weather', arguments: { city: 'Lima' } }] },
        'It is sunny in Lima.',
      ],
      chunkSize: 5,
    });
    const agent = new AsyncStreamingFunctionCallingAgent({ llm, actions: [weather] });
    const seen: string[] = [];
    agent.events.on('toolStart', (event) => seen.push(`start ${event.toolCalls.map((c) => c.name)}`));
    agent.events.on('toolEnd', (event) =>
      seen.push(`end ${(event.message.content as ActionReturn[]).map((r) => r.toText())}`),
    );
    const chunks: AgentMessage[] = [];
    for await (const chunk of agent.call('weather?')) {
      chunks.push(chunk);
      seen.push(`chunk ${chunk.streamState}`);
    }
    expect(shape(chunks)).toEqual([1, AgentStatusCode.PLUGIN_END, AgentStatusCode.PLUGIN_RETURN, 1, 0]);
    const end = chunks.find((chunk) => chunk.streamState === AgentStatusCode.PLUGIN_END)!;
    expect(toolCallsOf(end.formatted)?.map((call) => [call.name, call.arguments])).toEqual([
      ['Weather', { city: 'Lima' }],
    ]);
    expect(end.content).toBe('Let me check.');
    expect(end.delta).toBe('');
    const result = chunks.find((chunk) => chunk.streamState === AgentStatusCode.PLUGIN_RETURN)!;
    expect(result.content).toEqual([expect.any(ActionReturn)]);
    expect((result.content as ActionReturn[])[0]!.toText()).toBe('Sunny in Lima');
    expect(toolCallsOf(result.formatted)?.[0]?.id).toBe(toolCallsOf(end.formatted)?.[0]?.id);
    // A consumer printing deltas sees where the first model turn ends and the next begins.
    expect(deltas(chunks)).toBe('Let me check.\n\nIt is sunny in Lima.');
    // The events come as the round starts and ends, around the chunks that show it.
    expect(seen.filter((entry) => !entry.startsWith('chunk 1'))).toEqual([
      'start Weather',
      'chunk 4',
      'end Sunny in Lima',
      'chunk 5',
      'chunk 0',
    ]);
  });

  it('adds no turn break when no model turn wrote text before, and reports failed calls in the result chunk', async () => {
    const broken = asyncTool({
      name: 'Broken',
      description: 'fails',
      parameters: z.object({}),
      run: async () => {
        throw new Error('no such city');
      },
    });
    const llm = new AsyncMockLLM({
      responses: [
        { toolCalls: [{ name: 'Broken', arguments: {} }] },
        { toolCalls: [{ name: 'Weather', arguments: { city: 'Oslo' } }] },
        'Cold.',
      ],
    });
    const agent = new AsyncStreamingFunctionCallingAgent({ llm, actions: [broken, weather] });
    const chunks: AgentMessage[] = [];
    for await (const chunk of agent.call('weather?')) chunks.push(chunk);
    expect(shape(chunks)).toEqual([4, 5, 4, 5, 1, 0]);
    expect(deltas(chunks)).toBe('Cold.');
    const failed = (chunks[1]!.content as ActionReturn[])[0]!;
    expect(failed.state).not.toBe(ActionStatusCode.SUCCESS);
  });
});

describe('StreamingFunctionCallingAgent (sync)', () => {
  it('emits the same tool chunks and turn breaks', () => {
    const llm = new MockLLM({
      responses: [
        { content: 'Checking.', toolCalls: [{ name: 'Weather', arguments: { city: 'Oslo' } }] },
        'Cold.',
      ],
    });
    const agent = new StreamingFunctionCallingAgent({ llm, actions: [weather] });
    const chunks = [...agent.call('weather?')];
    expect(shape(chunks)).toEqual([1, 4, 5, 1, 0]);
    expect(deltas(chunks)).toBe('Checking.\n\nCold.');
  });
});

describe('toolStart / toolEnd events', () => {
  it('are emitted by the non-streaming variants too, once per round', async () => {
    const responses = () => [
      { toolCalls: [{ name: 'Weather', arguments: { city: 'Rome' } }] },
      { toolCalls: [{ name: 'Weather', arguments: { city: 'Nice' } }] },
      'Warm.',
    ];
    const asyncAgent = new AsyncFunctionCallingAgent({
      llm: new AsyncMockLLM({ responses: responses() }),
      actions: [weather],
    });
    const syncAgent = new FunctionCallingAgent({
      llm: new MockLLM({ responses: responses() }),
      actions: [weather],
    });
    for (const agent of [asyncAgent, syncAgent]) {
      const rounds: string[] = [];
      agent.events.on('toolStart', (event) => rounds.push(`start ${String(event.sessionId)} ${event.path}`));
      agent.events.on('toolEnd', (event) =>
        rounds.push(`end ${(event.message.content as ActionReturn[])[0]!.toText()}`),
      );
      await agent.call('weather?', { sessionId: 7 });
      expect(rounds).toEqual(['start 7 ', 'end Sunny in Rome', 'start 7 ', 'end Sunny in Nice']);
    }
  });
});

describe('AsyncStreamingFunctionCallingAgent on Claude (fake Anthropic server)', () => {
  it('streams the tool round as chunks, and the next request marks the failed result is_error', async () => {
    const broken = asyncTool({
      name: 'Broken',
      description: 'fails',
      parameters: z.object({}),
      run: async () => {
        throw new Error('the sensor is offline');
      },
    });
    const server = await startFakeAnthropic({
      script: [
        {
          content: 'Reading both.',
          toolCalls: [
            { id: 'toolu_w', name: 'Weather', arguments: { city: 'Lima' } },
            { id: 'toolu_b', name: 'Broken', arguments: {} },
          ],
        },
        'Lima is sunny; the sensor is offline.',
      ],
    });
    try {
      const llm = new AsyncClaudeAPI({ model: 'claude-test', apiKey: 'k', baseURL: server.baseURL });
      const agent = new AsyncStreamingFunctionCallingAgent({ llm, actions: [weather, broken] });
      const chunks: AgentMessage[] = [];
      for await (const chunk of agent.call('weather?')) chunks.push(chunk);
      expect(shape(chunks)).toEqual([1, 4, 5, 1, 0]);
      expect(deltas(chunks)).toBe('Reading both.\n\nLima is sunny; the sensor is offline.');
      const results = server.requests[1]!.body.messages.at(-1).content;
      expect(results[0]).toEqual({ type: 'tool_result', tool_use_id: 'toolu_w', content: 'Sunny in Lima' });
      expect(results[1]).toMatchObject({ type: 'tool_result', tool_use_id: 'toolu_b', is_error: true });
      expect(results[1].content).toContain('the sensor is offline');
    } finally {
      await server.close();
    }
  });
});
