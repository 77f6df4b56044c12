import { isDeepStrictEqual } from 'node:util';
import fc from 'fast-check';
import {
  ActionExecutor,
  AgentMessage,
  type ChatMessage,
  ConfigurationError,
  DefaultAggregator,
  Memory,
  TokenWindowAggregator,
  type ToolCall,
  toolCallsOf,
} from 'lagent-ts';
import { MockLLM } from 'lagent-ts/testing';
import { describe, expect, it } from 'vitest';
import { NOT_RUN_TEXT } from '#src/agents/aggregator/tool-turns';
import { countTokens } from '#src/llms/token-count';
import { propertyRuns } from '../../helpers/property-runs';
import { echo } from '../../helpers/tools';

const executor = new ActionExecutor({ actions: [echo] });
const estimate = (input: string | readonly ChatMessage[]) => countTokens(input);

const user = (text: string) => new AgentMessage({ sender: 'user', content: text });
const reply = (text: string) => new AgentMessage({ sender: 'Agent', content: text });
const callsMessage = (calls: ToolCall[]) =>
  new AgentMessage({ sender: 'Agent', content: '', formatted: { toolCalls: calls } });
const call = (id: string, text = id): ToolCall => ({ id, name: 'echo', arguments: { text } });

function memoryWith(...messages: AgentMessage[]): Memory {
  const memory = new Memory();
  memory.add(messages);
  return memory;
}

/** The tool-call ids of the assistant messages and of the tool messages of a prompt. */
function toolIds(prompt: readonly ChatMessage[]): { called: string[]; answered: string[] } {
  return {
    called: prompt.flatMap((message) => (message.toolCalls ?? []).map((c) => c.id)),
    answered: prompt.filter((m) => m.role === 'tool').map((m) => m.toolCallId!),
  };
}

describe('TokenWindowAggregator', () => {
  it('keeps the system prompt and the newest turns that fit, oldest dropped first', () => {
    const memory = memoryWith(
      user('a'.repeat(400)),
      reply('b'.repeat(400)),
      user('c'.repeat(40)),
      reply('d'),
    );
    const aggregator = new TokenWindowAggregator({ maxTokens: 120, reserve: 20 });
    const prompt = aggregator.aggregate(memory, 'Agent', undefined, 'You are terse.');
    expect(prompt.map((m) => m.content?.[0])).toEqual(['Y', 'c', 'd']);
    expect(estimate(prompt)).toBeLessThanOrEqual(100);
    // With room for everything it is the default aggregation.
    const wide = new TokenWindowAggregator({ maxTokens: 10_000 });
    expect(wide.aggregate(memory, 'Agent', undefined, 'You are terse.')).toEqual(
      new DefaultAggregator().aggregate(memory, 'Agent', undefined, 'You are terse.'),
    );
  });

  it('drops a tool-call message and its results together', () => {
    const calls = [call('call_1', 'x'.repeat(200)), call('call_2', 'y'.repeat(200))];
    const results = executor.call(callsMessage(calls));
    const memory = memoryWith(user('question'), callsMessage(calls), results, reply('answer'), user('next?'));
    const full = estimate(new DefaultAggregator().aggregate(memory, 'Agent'));
    // Room for everything but 10 tokens: 'question' (6 tokens) is not enough, so the whole tool turn goes,
    // never one of its results alone.
    const aggregator = new TokenWindowAggregator({ maxTokens: full - 10 });
    const prompt = aggregator.aggregate(memory, 'Agent');
    expect(toolIds(prompt)).toEqual({ called: [], answered: [] });
    expect(prompt.map((m) => m.content)).toEqual(['answer', 'next?']);
  });

  it('always sends the newest turn, even when it alone is over the limit', () => {
    const memory = memoryWith(user('old'), user('z'.repeat(4_000)));
    const prompt = new TokenWindowAggregator({ maxTokens: 100 }).aggregate(memory, 'Agent', undefined, 'sys');
    expect(prompt).toEqual([
      { role: 'system', content: 'sys' },
      { role: 'user', content: 'z'.repeat(4_000) },
    ]);
    // The newest turn is a whole tool turn: the call comes with its results.
    const calls = [call('call_1', 'q'.repeat(4_000))];
    const tools = memoryWith(user('old'), callsMessage(calls), executor.call(callsMessage(calls)));
    const out = new TokenWindowAggregator({ maxTokens: 100 }).aggregate(tools, 'Agent');
    expect(toolIds(out)).toEqual({ called: ['call_1'], answered: ['call_1'] });
    expect(out).toHaveLength(2);
  });

  it("counts with the model's counter (llm or countTokens)", () => {
    const llm = new MockLLM({ responses: [], model: 'gpt-4o' });
    const memory = memoryWith(
      ...Array.from({ length: 50 }, (_, i) => user(`message number ${i} `.repeat(5))),
    );
    const aggregator = new TokenWindowAggregator({ maxTokens: 300, llm });
    const prompt = aggregator.aggregate(memory, 'Agent', undefined, 'sys');
    expect(llm.countTokens(prompt)).toBeLessThanOrEqual(300);
    // A counter that makes each message cost 100 tokens.
    const flat = new TokenWindowAggregator({
      maxTokens: 350,
      countTokens: (input) => (typeof input === 'string' ? 1 : input.length * 100),
    });
    expect(flat.aggregate(memory, 'Agent')).toHaveLength(1); // joined user turns: 3 kept, sent as one
    expect(flat.aggregate(memoryWith(user('a'), reply('b'), user('c'), reply('d')), 'Agent')).toHaveLength(3);
  });

  it('refuses bad options', () => {
    expect(() => new TokenWindowAggregator({ maxTokens: 0 })).toThrow(ConfigurationError);
    expect(() => new TokenWindowAggregator({ maxTokens: 10, reserve: 10 })).toThrow(ConfigurationError);
    expect(() => new TokenWindowAggregator({ maxTokens: 10, llm: {} as never })).toThrow(ConfigurationError);
  });
});

type Step =
  | { kind: 'user' | 'assistant'; size: number }
  | { kind: 'calls'; ids: number[]; size: number }
  | { kind: 'results'; mode: 'all' | 'some' | 'split' | 'none'; pick: number; size: number };

const step: fc.Arbitrary<Step> = fc.oneof(
  fc.record({ kind: fc.constantFrom('user' as const, 'assistant' as const), size: fc.nat({ max: 400 }) }),
  fc.record({
    kind: fc.constant('calls' as const),
    ids: fc.uniqueArray(fc.integer({ min: 0, max: 5 }), { minLength: 1, maxLength: 3 }),
    size: fc.nat({ max: 300 }),
  }),
  fc.record({
    kind: fc.constant('results' as const),
    mode: fc.constantFrom('all' as const, 'some' as const, 'split' as const, 'none' as const),
    pick: fc.nat(),
    size: fc.nat({ max: 600 }),
  }),
);

/** A history an agent loop makes: turns, tool calls, and their results (all, some, one by one, none). */
function historyOf(steps: readonly Step[]): Memory {
  const memory = new Memory();
  let calls: ToolCall[] = [];
  let round = 0;
  for (const next of steps) {
    round++;
    if (next.kind === 'user') memory.add(user(`u${round} ${'w '.repeat(next.size)}`));
    else if (next.kind === 'assistant') memory.add(reply(`a${round} ${'r '.repeat(next.size)}`));
    else if (next.kind === 'calls') {
      calls = next.ids.map((id) => call(`call_${round}_${id}`, 'p'.repeat(next.size)));
      memory.add(callsMessage(calls));
    } else if (next.kind === 'results' && calls.length > 0 && next.mode !== 'none') {
      const answered = next.mode === 'some' ? calls.filter((_, i) => (next.pick >> i) & 1) : calls;
      const withText = answered.map((c) => ({ ...c, arguments: { text: 'o'.repeat(next.size) } }));
      if (next.mode === 'split') for (const one of withText) memory.add(executor.call(callsMessage([one])));
      else if (withText.length > 0) memory.add(executor.call(callsMessage(withText)));
    }
  }
  return memory;
}

/** How many tool results (not the stand-ins for calls that were not run) a prompt sends. */
function realResults(prompt: readonly ChatMessage[]): number {
  return prompt.filter((message) => message.role === 'tool' && message.content !== NOT_RUN_TEXT).length;
}

describe('TokenWindowAggregator windows (property)', () => {
  const llm = new MockLLM({ responses: [], model: 'gpt-4o' });
  for (const [label, counter] of [
    ['estimated', estimate],
    ['o200k_base', (input: string | readonly ChatMessage[]) => llm.countTokens(input)],
  ] as const) {
    it(`fit, keep tool calls with their results and the newest turn (${label})`, () => {
      fc.assert(
        fc.property(
          fc.array(step, { minLength: 1, maxLength: 30 }),
          fc.integer({ min: 50, max: 3_000 }),
          fc.integer({ min: 0, max: 40 }),
          (steps, maxTokens, reserve) => {
            const memory = historyOf(steps);
            if (memory.length === 0) return;
            const aggregator = new TokenWindowAggregator({ maxTokens, reserve, countTokens: counter });
            const prompt = aggregator.aggregate(memory, 'Agent', undefined, 'system prompt');
            const again = aggregator.aggregate(memory, 'Agent', undefined, 'system prompt'); // cached counts
            expect(again).toEqual(prompt);
            expect(prompt[0]).toEqual({ role: 'system', content: 'system prompt' });
            const history = memory.getMemory();
            const render = (from: number) =>
              new DefaultAggregator().aggregate(
                memoryWith(...history.slice(from)),
                'Agent',
                undefined,
                'system prompt',
              );
            const results = (from: number, to = history.length) =>
              realResults(new DefaultAggregator().aggregate(memoryWith(...history.slice(from, to)), 'Agent'));
            // The window is the default rendering of the newest `history.length - start` messages (at least one).
            let start = history.length - 1;
            while (start >= 0 && !isDeepStrictEqual(render(start), prompt)) start--;
            expect(start).toBeGreaterThanOrEqual(0);
            // No result lost its call: the window's results are those the full prompt shows for the same messages.
            expect(results(0)).toBe(results(0, start) + results(start));
            // Within the limit, unless the window is the newest turn alone: one message, or the agent's tool-call
            // message with the results after it.
            if (counter(prompt) > maxTokens - reserve) {
              const [first, ...rest] = history.slice(start);
              if (rest.length > 0) {
                expect(first!.sender).toBe('Agent');
                expect(toolCallsOf(first!.formatted)).not.toBeNull();
                for (const message of rest) {
                  expect(message.sender).not.toBe('Agent');
                  expect(toolCallsOf(message.formatted)).not.toBeNull();
                }
              }
            }
          },
        ),
        { numRuns: propertyRuns(300) },
      );
    });
  }
});
