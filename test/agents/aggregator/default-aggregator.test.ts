import fc from 'fast-check';
import type { ToolCallsMessage } from 'lagent-ts';
import {
  ActionExecutor,
  ActionReturn,
  ActionStatusCode,
  AgentMessage,
  type ChatMessage,
  DefaultAggregator,
  Memory,
  type ToolCall,
} from 'lagent-ts';
import { describe, expect, it } from 'vitest';
import { NOT_RUN_TEXT } from '#src/agents/aggregator/tool-turns';
import { propertyRuns } from '../../helpers/property-runs';
import { echo } from '../../helpers/tools';

const aggregator = new DefaultAggregator();

/**
 * Whether `messages` is a history the OpenAI Chat Completions API accepts: system messages first; known
 * roles with string content (an assistant that calls tools may have `null`); every assistant tool call has
 * a unique id and is answered by exactly one `tool` message among the messages right after it, before any
 * other message; no `tool` message without its call.
 */
function isValidOpenAIHistory(messages: readonly ChatMessage[]): { valid: boolean; problem?: string } {
  const fail = (problem: string, at: number) => ({ valid: false, problem: `${problem} at ${at}` });
  let waiting: Set<string> | null = null;
  let seenNonSystem = false;
  for (let i = 0; i < messages.length; i++) {
    const message = messages[i]!;
    if (message.role === 'tool') {
      if (waiting === null) return fail('tool message without a call', i);
      if (typeof message.toolCallId !== 'string') return fail('tool message without toolCallId', i);
      if (!waiting.has(message.toolCallId)) return fail(`result for ${message.toolCallId} not awaited`, i);
      if (typeof message.content !== 'string') return fail('tool message content is not text', i);
      waiting.delete(message.toolCallId);
      if (waiting.size === 0) waiting = null;
      continue;
    }
    if (waiting !== null)
      return fail(`calls ${[...waiting].join(', ')} unanswered before a ${message.role}`, i);
    if (message.toolCallId !== undefined) return fail('toolCallId on a non-tool message', i);
    if (message.role === 'system') {
      if (seenNonSystem) return fail('system message after the dialog started', i);
      if (typeof message.content !== 'string') return fail('system content is not text', i);
      continue;
    }
    seenNonSystem = true;
    if (message.role === 'user') {
      if (typeof message.content !== 'string') return fail('user content is not text', i);
      if (message.toolCalls !== undefined) return fail('user message with tool calls', i);
    } else if (message.role === 'assistant') {
      const calls = message.toolCalls;
      if (calls === undefined) {
        if (typeof message.content !== 'string') return fail('assistant content is not text', i);
        continue;
      }
      if (!Array.isArray(calls) || calls.length === 0) return fail('empty toolCalls', i);
      if (message.content !== null && typeof message.content !== 'string') return fail('bad content', i);
      const ids = new Set<string>();
      for (const call of calls) {
        if (typeof call.id !== 'string' || typeof call.name !== 'string') return fail('malformed call', i);
        if (!(typeof call.arguments === 'string' || (call.arguments && typeof call.arguments === 'object')))
          return fail('bad arguments', i);
        if (ids.has(call.id)) return fail(`duplicate call id ${call.id}`, i);
        ids.add(call.id);
      }
      waiting = ids;
    } else return fail(`unknown role ${message.role}`, i);
  }
  if (waiting !== null) return fail('history ends with unanswered calls', messages.length);
  return { valid: true };
}

const executor = new ActionExecutor({ actions: [echo] });

const callsMessage = (calls: ToolCall[], content = '') =>
  new AgentMessage({ sender: 'Agent', content, formatted: { toolCalls: calls } }) as ToolCallsMessage<string>;
const call = (id: string, text = id): ToolCall => ({ id, name: 'echo', arguments: { text } });

function memoryWith(...messages: AgentMessage[]): Memory {
  const memory = new Memory();
  memory.add(messages);
  return memory;
}

/** The aggregation before native tool calls, for histories without them. */
function textOnly(memory: Memory, name: string, system?: string): ChatMessage[] {
  const out: ChatMessage[] = system ? [{ role: 'system', content: system }] : [];
  for (const message of memory.getMemory()) {
    const text =
      typeof message.content === 'string'
        ? message.content
        : message.content instanceof ActionReturn
          ? message.content.toText()
          : JSON.stringify(message.content);
    if (message.sender === name) out.push({ role: 'assistant', content: text });
    else if (out.at(-1)?.role === 'user') out.at(-1)!.content += text;
    else out.push({ role: 'user', content: text });
  }
  return out;
}

describe('DefaultAggregator with native tool calls', () => {
  it('renders a tool-call reply as an assistant message with toolCalls, and the results as tool messages', () => {
    const calls = callsMessage([call('a', 'x'), { id: 'b', name: 'Kit.api', arguments: '{"q": 1}' }]);
    const reply = executor.call(calls);
    const memory = memoryWith(new AgentMessage({ sender: 'user', content: 'go' }), calls, reply);
    const out = aggregator.aggregate(memory, 'Agent', undefined, 'sys');
    expect(out).toEqual([
      { role: 'system', content: 'sys' },
      { role: 'user', content: 'go' },
      {
        role: 'assistant',
        content: null,
        toolCalls: [
          { id: 'a', name: 'echo', arguments: { text: 'x' } },
          { id: 'b', name: 'Kit.api', arguments: '{"q": 1}' },
        ],
      },
      { role: 'tool', toolCallId: 'a', name: 'echo', content: 'x' },
      // A failed call's message says so (Anthropic's tool_result gets is_error).
      { role: 'tool', toolCallId: 'b', name: 'Kit.api', content: reply.content[1]!.toText(), isError: true },
    ]);
    expect(reply.content[1]!.state).toBe(ActionStatusCode.API_ERROR); // no tool Kit: its error goes back
    // The model's text is kept next to its calls.
    const withText = aggregator.aggregate(memoryWith(callsMessage([call('a')], 'Let me look.')), 'Agent');
    expect(withText[0]).toMatchObject({ role: 'assistant', content: 'Let me look.' });
  });

  it('answers a call without a result with a tool message saying it was not run', () => {
    const calls = callsMessage([call('a'), call('b')]);
    const partial = new AgentMessage({
      sender: 'ActionExecutor',
      content: [new ActionReturn({ result: [{ type: 'text', content: 'A' }] })],
      formatted: { toolCalls: [call('a')] },
    });
    const out = aggregator.aggregate(
      memoryWith(calls, partial, new AgentMessage({ sender: 'user', content: 'next' })),
      'Agent',
    );
    expect(out.slice(1)).toEqual([
      { role: 'tool', toolCallId: 'a', name: 'echo', content: 'A' },
      { role: 'tool', toolCallId: 'b', name: 'echo', content: NOT_RUN_TEXT },
      { role: 'user', content: 'next' },
    ]);
    // The loop stopped right after the calls: the history still ends validly.
    const stopped = aggregator.aggregate(memoryWith(calls), 'Agent');
    expect(stopped.map((message) => message.role)).toEqual(['assistant', 'tool', 'tool']);
  });

  it('keeps the first result of an id and shows results nobody waits for as user text', () => {
    const calls = callsMessage([call('a')]);
    const reply = executor.call(calls);
    const foreign = executor.call(callsMessage([call('z', 'elsewhere')]));
    const out = aggregator.aggregate(memoryWith(calls, reply, reply.clone(), foreign), 'Agent');
    expect(out).toEqual([
      expect.objectContaining({ role: 'assistant' }),
      { role: 'tool', toolCallId: 'a', name: 'echo', content: 'a' },
      { role: 'user', content: 'Result of echo: elsewhere' },
    ]);
    // A results message given to an agent that made no calls reads as user text.
    expect(aggregator.aggregate(memoryWith(reply), 'Summarizer')).toEqual([
      { role: 'user', content: 'Result of echo: a' },
    ]);
  });

  it('dedupes repeated call ids in one message and accepts ids reused in a later turn', () => {
    const first = callsMessage([call('call_0'), call('call_0', 'again')]);
    const second = callsMessage([call('call_0', 'later')]);
    const memory = memoryWith(first, executor.call(first), second, executor.call(second));
    const out = aggregator.aggregate(memory, 'Agent');
    expect(isValidOpenAIHistory(out)).toEqual({ valid: true });
    expect(out.map((message) => message.content)).toEqual([null, 'call_0', null, 'later']);
  });

  it('pairs results by id, whatever their order or grouping, for many calls at once', () => {
    const calls = Array.from({ length: 40 }, (_, i) => call(`c${i}`));
    const message = callsMessage(calls);
    const reversed = executor.call(callsMessage([...calls].reverse().slice(0, 20)));
    const rest = calls
      .slice(0, 20)
      .filter((_, i) => i % 2 === 0)
      .map((one) => executor.call(callsMessage([one])));
    const out = aggregator.aggregate(memoryWith(message, reversed, ...rest), 'Agent');
    expect(isValidOpenAIHistory(out)).toEqual({ valid: true });
    const tools = out.filter((item) => item.role === 'tool');
    expect(tools).toHaveLength(40);
    for (const item of tools) {
      const index = Number(item.toolCallId!.slice(1));
      const expected = index >= 20 || index % 2 === 0 ? item.toolCallId : NOT_RUN_TEXT;
      expect(item.content).toBe(expected);
    }
  });

  it('results stay paired after a save / load round trip', () => {
    const calls = callsMessage([call('a'), call('b')]);
    const memory = memoryWith(calls, executor.call(calls));
    const loaded = new Memory();
    loaded.load(JSON.parse(JSON.stringify(memory.save())));
    expect((loaded.getMemory()[1]!.content as unknown[])[0]).toBeInstanceOf(ActionReturn);
    expect(aggregator.aggregate(loaded, 'Agent')).toEqual(aggregator.aggregate(memory, 'Agent'));
  });

  it('does not modify the memory, and its output shares no call object with it', () => {
    const calls = callsMessage([call('a')]);
    const memory = memoryWith(calls, executor.call(calls));
    const before = JSON.stringify(memory.save());
    const out = aggregator.aggregate(memory, 'Agent');
    (out[0]!.toolCalls![0]!.arguments as Record<string, unknown>).text = 'changed';
    out[0]!.toolCalls!.push(call('b'));
    expect(JSON.stringify(memory.save())).toBe(before);
  });

  it('leaves text turns as they were', () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.record({
            sender: fc.constantFrom('user', 'Agent', 'ActionExecutor', 'other'),
            content: fc.oneof(fc.string(), fc.constant('')),
          }),
        ),
        (turns) => {
          const memory = memoryWith(...turns.map((turn) => new AgentMessage(turn)));
          expect(aggregator.aggregate(memory, 'Agent', undefined, 'sys')).toEqual(
            textOnly(memory, 'Agent', 'sys'),
          );
        },
      ),
      { numRuns: propertyRuns(200) },
    );
  });
});

type Step =
  | { kind: 'user' | 'assistant'; text: string }
  | { kind: 'calls'; ids: number[]; text: string }
  | {
      kind: 'results';
      mode: 'all' | 'some' | 'reversed' | 'split' | 'extra' | 'twice' | 'text';
      pick: number;
    }
  | { kind: 'foreign'; id: number }
  | { kind: 'delete'; at: number }
  | { kind: 'roundTrip' };

const step: fc.Arbitrary<Step> = fc.oneof(
  fc.record({
    kind: fc.constantFrom('user' as const, 'assistant' as const),
    text: fc.string({ maxLength: 5 }),
  }),
  fc.record({
    kind: fc.constant('calls' as const),
    ids: fc.array(fc.integer({ min: 0, max: 4 }), { minLength: 1, maxLength: 3 }),
    text: fc.constantFrom('', 'thinking'),
  }),
  fc.record({
    kind: fc.constant('results' as const),
    mode: fc.constantFrom(
      'all' as const,
      'some' as const,
      'reversed' as const,
      'split' as const,
      'extra' as const,
      'twice' as const,
      'text' as const,
    ),
    pick: fc.nat(),
  }),
  fc.record({ kind: fc.constant('foreign' as const), id: fc.integer({ min: 0, max: 6 }) }),
  fc.record({ kind: fc.constant('delete' as const), at: fc.nat() }),
  fc.record({ kind: fc.constant('roundTrip' as const) }),
);

/** Applies one step to the memory, the way an agent loop, a failing executor or a user might. */
function apply(memory: Memory, current: { calls: ToolCall[] }, next: Step): Memory {
  const add = (message: AgentMessage) => memory.add(message);
  const results = (calls: ToolCall[]) => executor.call(callsMessage(calls));
  switch (next.kind) {
    case 'user':
      add(new AgentMessage({ sender: 'user', content: next.text }));
      break;
    case 'assistant':
      add(new AgentMessage({ sender: 'Agent', content: next.text }));
      break;
    case 'calls': {
      current.calls = next.ids.map((id, i) => ({
        id: `call_${id}`,
        name: i === 2 ? 'missing' : 'echo',
        arguments: i === 1 ? '{"text": "json"}' : { text: `t${id}` },
      }));
      add(callsMessage(current.calls, next.text));
      break;
    }
    case 'results': {
      const calls = current.calls;
      if (calls.length === 0) break;
      if (next.mode === 'all') add(results(calls));
      else if (next.mode === 'some') add(results(calls.filter((_, i) => (next.pick >> i) & 1)));
      else if (next.mode === 'reversed') add(results([...calls].reverse()));
      else if (next.mode === 'split') for (const one of calls) add(results([one]));
      else if (next.mode === 'extra')
        add(results([...calls, { id: `x${next.pick}`, name: 'echo', arguments: {} }]));
      else if (next.mode === 'twice') {
        add(results(calls));
        add(results(calls));
      } else {
        // An afterAction hook made the answer text.
        const reply = results(calls.slice(0, 1));
        add(
          new AgentMessage({
            sender: 'ActionExecutor',
            content: reply.content[0]!.toText(),
            formatted: reply.formatted,
          }),
        );
      }
      break;
    }
    case 'foreign':
      add(results([{ id: `call_${next.id}`, name: 'echo', arguments: { text: 'foreign' } }]));
      break;
    case 'delete':
      if (memory.length > 0) memory.delete(next.at % memory.length);
      break;
    case 'roundTrip': {
      const loaded = new Memory();
      loaded.load(JSON.parse(JSON.stringify(memory.save())));
      return loaded;
    }
  }
  return memory;
}

describe('DefaultAggregator histories (property)', () => {
  it('always produce a valid OpenAI history', () => {
    fc.assert(
      fc.property(fc.array(step, { maxLength: 25 }), fc.boolean(), (steps, withSystem) => {
        let memory = new Memory();
        const current = { calls: [] as ToolCall[] };
        for (const next of steps) {
          memory = apply(memory, current, next);
          const before = JSON.stringify(memory.save());
          const out = aggregator.aggregate(memory, 'Agent', undefined, withSystem ? 'sys' : undefined);
          const verdict = isValidOpenAIHistory(out);
          if (!verdict.valid) throw new Error(`${verdict.problem}: ${JSON.stringify(out)}`);
          expect(JSON.stringify(memory.save())).toBe(before);
          // Every call the agent made is answered: by its result when one is in memory right after it.
          const called = out.flatMap((message) => message.toolCalls ?? []).length;
          expect(out.filter((message) => message.role === 'tool')).toHaveLength(called);
        }
      }),
      { numRuns: propertyRuns(1_000) },
    );
  });

  it('isValidOpenAIHistory rejects what the API refuses', () => {
    const assistant: ChatMessage = { role: 'assistant', content: null, toolCalls: [call('a'), call('b')] };
    const result = (id: string): ChatMessage => ({ role: 'tool', toolCallId: id, content: 'r' });
    expect(isValidOpenAIHistory([assistant, result('a'), result('b')]).valid).toBe(true);
    expect(isValidOpenAIHistory([assistant, result('a')]).valid).toBe(false);
    expect(
      isValidOpenAIHistory([assistant, result('a'), { role: 'user', content: 'x' }, result('b')]).valid,
    ).toBe(false);
    expect(isValidOpenAIHistory([assistant, result('a'), result('a'), result('b')]).valid).toBe(false);
    expect(isValidOpenAIHistory([result('a')]).valid).toBe(false);
    expect(
      isValidOpenAIHistory([
        { role: 'user', content: 'x' },
        { role: 'system', content: 's' },
      ]).valid,
    ).toBe(false);
  });
});
