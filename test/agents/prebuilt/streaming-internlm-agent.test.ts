import {
  type AgentMessage,
  AgentStatusCode,
  AsyncStreamingAgentForInternLM,
  StreamingAgentForInternLM,
  tool,
} from 'lagent-ts';
import { AsyncMockLLM, MockLLM } from 'lagent-ts/testing';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { interpreterCall } from '../../helpers/internlm-replies';
import { fakePython } from '../../helpers/tools';

const search = tool({
  name: 'Search',
  description: 'Looks things up',
  parameters: z.object({ query: z.string() }),
  run: ({ query }) => `found ${query}`,
});

const pluginCall =
  'Searching.<|action_start|><|plugin|>\n{"name": "Search", "parameters": {"query": "tea"}}<|action_end|>\n';
const codeCall = interpreterCall('print(1)', 'Computing.');

/** Consecutive equal states collapsed: the shape of the stream. */
function shape(chunks: AgentMessage[]): number[] {
  return chunks.map((c) => c.streamState).filter((state, i, all) => i === 0 || all[i - 1] !== state);
}

const S = AgentStatusCode;

describe('StreamingAgentForInternLM', () => {
  it("emits Lagent's stream states: writing, the finished call, its result, then the answer once", () => {
    const llm = new MockLLM({ chunkSize: 6, responses: [pluginCall, codeCall, 'Tea is found.'] });
    const agent = new StreamingAgentForInternLM({ llm, plugins: [search], interpreter: fakePython });
    const chunks = [...agent.call('tea?')];

    expect(shape(chunks)).toEqual([
      S.STREAM_ING,
      S.PLUGIN_START,
      S.PLUGIN_END,
      S.PLUGIN_RETURN,
      S.STREAM_ING,
      S.CODING,
      S.CODE_END,
      S.CODE_RETURN,
      S.STREAM_ING,
      S.END,
    ]);
    const byState = (state: number) => chunks.filter((c) => c.streamState === state);
    expect(byState(S.PLUGIN_END).map((c) => [c.content, c.formatted?.action])).toEqual([
      [pluginCall, { name: 'Search', parameters: { query: 'tea' } }],
    ]);
    expect(byState(S.PLUGIN_RETURN).map((c) => [c.sender, c.content])).toEqual([
      ['ActionExecutor', 'found tea'],
    ]);
    expect(byState(S.CODE_END).map((c) => c.formatted?.action)).toEqual(['print(1)']);
    expect(byState(S.CODE_RETURN).map((c) => c.content)).toEqual(['ran print(1)']);
    const finals = byState(S.END);
    expect(finals).toHaveLength(1);
    expect(finals[0]).toBe(chunks.at(-1));
    expect(finals[0]!.content).toBe('Tea is found.');
    expect(chunks.slice(0, -1).every((c) => c.streamState !== S.END)).toBe(true);
  });

  it('streams deltas that add up to what was written, without repeating a finished call', () => {
    const llm = new MockLLM({ chunkSize: 5, responses: [codeCall, 'Done.'] });
    const agent = new StreamingAgentForInternLM({ llm, interpreter: fakePython });
    const chunks = [...agent.call('go')];
    const end = chunks.findIndex((c) => c.streamState === S.CODE_END);
    expect(
      chunks
        .slice(0, end)
        .map((c) => c.delta)
        .join(''),
    ).toBe(codeCall);
    expect(chunks.find((c) => c.streamState === S.CODE_END)!.delta).toBe('');
  });

  it('keeps memory like the non-streaming agent and takes the turn back when the consumer leaves', () => {
    const llm = new MockLLM({ responses: [codeCall, 'Done.', codeCall] });
    const agent = new StreamingAgentForInternLM({ llm, interpreter: fakePython });
    const final = [...agent.call('go')].at(-1)!;
    expect(final.content).toBe('Done.');
    expect(Object.keys(agent.stateDict())).toEqual(['memory', 'agent.memory']);
    expect(agent.stateDict()['agent.memory']).toHaveLength(4);
    for (const chunk of agent.call('again', { sessionId: 2 })) {
      if (chunk.streamState === S.CODE_END) break;
    }
    expect(agent.stateDict(2)).toEqual({ memory: [], 'agent.memory': [] });
  });

  it('marks malformed calls as ended and their NoAction answers as returned', () => {
    const llm = new MockLLM({
      responses: ['Bad.<|action_start|><|plugin|>\n{oops}<|action_end|>\n', 'Fine.'],
    });
    const agent = new StreamingAgentForInternLM({ llm, plugins: [search] });
    const chunks = [...agent.call('go')];
    const returned = chunks.find((c) => c.streamState === S.PLUGIN_RETURN)!;
    expect(returned.content).toMatch(/^The plugin call could not be parsed/);
    expect(chunks.at(-1)!.content).toBe('Fine.');
  });

  it('stops at maxTurn with one final chunk that says so', () => {
    const llm = new MockLLM({ responses: () => codeCall });
    const agent = new StreamingAgentForInternLM({ llm, interpreter: fakePython, maxTurn: 2 });
    const chunks = [...agent.call('loop')];
    expect(chunks.filter((c) => c.streamState === S.END)).toHaveLength(1);
    expect(chunks.at(-1)!.content).toMatch(/^StreamingAgentForInternLM stopped after 2 turns/);
    expect(llm.calls).toHaveLength(2);
  });
});

describe('AsyncStreamingAgentForInternLM', () => {
  it('emits the same states from an async model', async () => {
    const llm = new AsyncMockLLM({ chunkSize: 6, responses: [pluginCall, 'Tea is found.'] });
    const agent = new AsyncStreamingAgentForInternLM({ llm, plugins: [search] });
    const chunks: AgentMessage[] = [];
    for await (const chunk of agent.call('tea?', { sessionId: 'a' })) chunks.push(chunk);
    expect(shape(chunks)).toEqual([
      S.STREAM_ING,
      S.PLUGIN_START,
      S.PLUGIN_END,
      S.PLUGIN_RETURN,
      S.STREAM_ING,
      S.END,
    ]);
    expect(chunks.at(-1)!.content).toBe('Tea is found.');
    expect(agent.stateDict('a')['agent.memory']).toHaveLength(4);
  });

  it('takes the turn back when the consumer leaves early', async () => {
    const llm = new AsyncMockLLM({ responses: [pluginCall] });
    const agent = new AsyncStreamingAgentForInternLM({ llm, plugins: [search] });
    for await (const chunk of agent.call('tea?')) if (chunk.streamState === S.PLUGIN_RETURN) break;
    expect(agent.stateDict()).toEqual({ memory: [], 'agent.memory': [] });
  });
});
