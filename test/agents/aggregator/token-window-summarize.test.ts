import type { AsyncForwardOptions } from 'lagent-ts';
import {
  ActionExecutor,
  Agent,
  type AgentMessage,
  AsyncAgent,
  type ChatMessage,
  ConfigurationError,
  type ForwardOptions,
  TokenWindowAggregator,
  toolCallsOf,
} from 'lagent-ts';
import { AsyncMockLLM, MockLLM } from 'lagent-ts/testing';
import { describe, expect, it, vi } from 'vitest';
import { isSummary, SUMMARY_INSTRUCTION } from '#src/agents/aggregator/summarize';
import { echo } from '../../helpers/tools';

/** A summariser model that says which turns it was given. */
function summaryModel(): MockLLM {
  return new MockLLM({
    responses: (messages) => {
      expect(messages[0]).toEqual({ role: 'system', content: SUMMARY_INSTRUCTION });
      const text = messages[1]!.content ?? '';
      const turns = [...text.matchAll(/turns? ([\d,]+)/g)].flatMap((match) => match[1]!.split(','));
      return `talked about turns ${[...new Set(turns.filter(Boolean))].join(',')}`;
    },
  });
}

const chatModel = () =>
  new MockLLM({ responses: (_messages, _params, i) => `reply ${i} ${'word '.repeat(20)}` });

const options = (summarizer: MockLLM | AsyncMockLLM) => ({
  maxTokens: 1_000,
  summarize: { llm: summarizer, triggerTokens: 300, keepTokens: 120 },
});

/** An agent with a forward of its own: its calls run in a call frame, where a summary can be taken back. */
class Chat extends Agent {
  override forward(messages: AgentMessage[], forwardOptions: ForwardOptions) {
    return super.forward(messages, forwardOptions);
  }
}

/** Calls `chat`, then fails when told to. */
class Outer extends Agent {
  fail = false;
  constructor(readonly chat: Agent) {
    super({ memory: null });
  }
  override forward(messages: AgentMessage[], forwardOptions: ForwardOptions) {
    const reply = this.chat.call(messages, { sessionId: forwardOptions.sessionId });
    if (this.fail) throw new Error('the outer call fails after the summary');
    return reply;
  }
}

const question = (i: number) => `question for turn ${i}: ${'detail '.repeat(15)}`;

describe('TokenWindowAggregator summarize', () => {
  it('folds older turns into one summary kept in memory; the model sees the summary and the recent turns', () => {
    const llm = chatModel();
    const summarizer = summaryModel();
    const chat = new Chat({
      llm,
      template: 'Be brief.',
      aggregator: new TokenWindowAggregator(options(summarizer)),
    });
    for (let i = 0; i < 12; i++) chat.call(question(i));
    expect(summarizer.calls.length).toBeGreaterThan(0);
    const memory = chat.memory!.get(0)!.getMemory();
    expect(isSummary(memory[0]!)).toBe(true);
    expect(memory.filter(isSummary)).toHaveLength(1);
    // In the state dict, and back from it.
    const state = chat.stateDict();
    expect((state.memory as { formatted: unknown }[])[0]!.formatted).toMatchObject({ summary: true });
    const restored = new Chat({
      llm: chatModel(),
      aggregator: new TokenWindowAggregator(options(summaryModel())),
    });
    restored.loadStateDict(state);
    expect(isSummary(restored.memory!.get(0)!.getMemory()[0]!)).toBe(true);
    // The last prompt: system, the summary, then the newest turns as they were.
    const prompt = llm.calls.at(-1)!.messages;
    expect(prompt[0]).toEqual({ role: 'system', content: 'Be brief.' });
    expect(prompt[1]!.content).toMatch(/^Summary of the earlier conversation:\ntalked about turns 0,1,/);
    expect(prompt.at(-1)!.content).toBe(question(11));
    expect(prompt.some((message) => message.content === question(0))).toBe(false);
    // Later summaries fold the earlier one in (the summariser saw it): turn 0 is still covered.
    expect(summarizer.calls.length).toBeGreaterThan(1);
    expect(summarizer.calls.at(-1)!.messages[1]!.content).toContain('Summary of the earlier conversation');
  });

  it('never separates a tool call from its results when folding', () => {
    const llm = chatModel();
    const chat = new Chat({ llm, aggregator: new TokenWindowAggregator(options(summaryModel())) });
    const executor = new ActionExecutor({ actions: [echo] });
    for (let i = 0; i < 10; i++) {
      chat.call(question(i));
      const calls = [{ id: `call_${i}`, name: 'echo', arguments: { text: `turn ${i} ${'x'.repeat(100)}` } }];
      const callMessage = { sender: 'Chat', content: '', formatted: { toolCalls: calls } };
      const memory = chat.memory!.get(0)!;
      memory.add(callMessage);
      memory.add(executor.call(memory.getMemory().at(-1)!));
    }
    chat.call('and now?');
    for (const call of llm.calls) {
      const prompt: ChatMessage[] = call.messages;
      const called = prompt.flatMap((message) => (message.toolCalls ?? []).map((c) => c.id));
      const answered = prompt
        .filter((message) => message.role === 'tool')
        .map((message) => message.toolCallId);
      expect(answered).toEqual(called);
      expect(
        prompt.filter((message) => message.role === 'tool').every((m) => m.content!.startsWith('turn')),
      ).toBe(true);
    }
    // No result was shown without its call (as `Result of echo: ...` user text).
    for (const call of llm.calls) expect(JSON.stringify(call.messages)).not.toContain('Result of echo');
    // In memory, every result still follows the message that called it.
    const memory = chat.memory!.get(0)!.getMemory();
    expect(isSummary(memory[0]!)).toBe(true);
    memory.forEach((message, at) => {
      const results = message.sender === 'ActionExecutor' ? toolCallsOf(message.formatted) : null;
      if (results === null) return;
      expect(toolCallsOf(memory[at - 1]!.formatted)?.map((c) => c.id)).toEqual(results.map((c) => c.id));
    });
  });

  it('a failing outer call takes the summary back', () => {
    const summarizer = summaryModel();
    const chat = new Agent({ llm: chatModel(), aggregator: new TokenWindowAggregator(options(summarizer)) });
    const outer = new Outer(chat);
    let i = 0;
    // Up to the call that summarises first.
    while (summarizer.calls.length === 0) {
      const before = outer.stateDict();
      outer.fail = true;
      expect(() => outer.call(question(i))).toThrow('the outer call fails after the summary');
      expect(outer.stateDict()).toEqual(before);
      outer.fail = false;
      outer.call(question(i++));
    }
    expect(isSummary(chat.memory!.get(0)!.getMemory()[0]!)).toBe(true);
    // The summary made by a failing call is taken back with the call's turn: the state is as before.
    const before = outer.stateDict();
    const summaries = summarizer.calls.length;
    for (let j = 0; j < 8; j++) outer.call(question(i++));
    expect(summarizer.calls.length).toBeGreaterThan(summaries);
    const settled = outer.stateDict();
    outer.fail = true;
    const calls = summarizer.calls.length;
    for (let j = 0; j < 5; j++) {
      expect(() => outer.call(question(100 + j))).toThrow('the outer call fails after the summary');
      expect(outer.stateDict()).toEqual(settled);
    }
    expect(summarizer.calls.length).toBeGreaterThan(calls);
    expect(before).not.toEqual(settled);
  });

  it('an async agent awaits compact() in its forward; a failure takes the summary back', async () => {
    const summarizer = new AsyncMockLLM({ responses: () => 'an async summary', latencyMs: 1 });
    const aggregator = new TokenWindowAggregator(options(summarizer));
    class AsyncChat extends AsyncAgent {
      fail = false;
      override async forward(messages: AgentMessage[], forwardOptions: AsyncForwardOptions) {
        await aggregator.compact(this.memory!.get(forwardOptions.sessionId)!, this.name);
        if (this.fail) throw new Error('fails after compacting');
        return super.forward(messages, forwardOptions);
      }
    }
    const llm = new AsyncMockLLM({ responses: (_m, _p, i) => `reply ${i} ${'word '.repeat(20)}` });
    const chat = new AsyncChat({ llm, aggregator });
    for (let i = 0; i < 8; i++) await chat.call(question(i));
    expect(summarizer.calls.length).toBeGreaterThan(0);
    expect(chat.memory!.get(0)!.getMemory()[0]!.content).toBe(
      'Summary of the earlier conversation:\nan async summary',
    );
    // Fail a call, then make it succeed, until a failing call has summarised: its summary is taken back.
    let summarisedAndFailed = false;
    for (let i = 8; i < 40 && !summarisedAndFailed; i++) {
      const before = chat.stateDict();
      const count = summarizer.calls.length;
      chat.fail = true;
      await expect(chat.call(question(i))).rejects.toThrow('fails after compacting');
      expect(chat.stateDict()).toEqual(before);
      chat.fail = false;
      summarisedAndFailed = summarizer.calls.length > count;
      await chat.call(question(i));
    }
    expect(summarisedAndFailed).toBe(true);
    expect(summarizer.calls.length).toBeGreaterThan(1);
  });

  it('an outermost Agent with the built-in forward summarises inside its own call, and a failed call takes it back', () => {
    const warning = vi.spyOn(process, 'emitWarning').mockImplementation(() => {});
    try {
      const summarizer = summaryModel();
      let failNext = false;
      const llm = new MockLLM({
        responses: (_messages, _params, i) => {
          if (failNext) throw new Error('the model is down');
          return `reply ${i} ${'word '.repeat(20)}`;
        },
      });
      const chat = new Agent({ llm, aggregator: new TokenWindowAggregator(options(summarizer)) });
      for (let i = 0; i < 12; i++) chat.call(question(i));
      expect(summarizer.calls.length).toBeGreaterThan(0);
      expect(chat.memory!.get(0)!.getMemory().some(isSummary)).toBe(true);
      // A call that fails after its summary puts the folded turns back.
      let summarisedAndFailed = false;
      for (let i = 12; i < 40 && !summarisedAndFailed; i++) {
        const before = chat.stateDict();
        const count = summarizer.calls.length;
        failNext = true;
        expect(() => chat.call(question(i))).toThrow('the model is down');
        expect(chat.stateDict()).toEqual(before);
        failNext = false;
        summarisedAndFailed = summarizer.calls.length > count;
        chat.call(question(i));
      }
      expect(summarisedAndFailed).toBe(true);
      const skipped = warning.mock.calls.filter(
        (call) => (call[1] as { code?: string })?.code === 'LAGENT_SUMMARY_SKIPPED',
      );
      expect(skipped).toHaveLength(0);
    } finally {
      warning.mockRestore();
    }
  });

  it('an AsyncAgent with the built-in forward summarises with an async model by itself', async () => {
    const summarizer = new AsyncMockLLM({ responses: () => 'an async summary' });
    const llm = new AsyncMockLLM({ responses: (_m, _p, i) => `reply ${i} ${'word '.repeat(20)}` });
    const chat = new AsyncAgent({ llm, aggregator: new TokenWindowAggregator(options(summarizer)) });
    for (let i = 0; i < 8; i++) await chat.call(question(i));
    expect(summarizer.calls.length).toBeGreaterThan(0);
    expect(chat.memory!.get(0)!.getMemory()[0]!.content).toBe(
      'Summary of the earlier conversation:\nan async summary',
    );
    const sync = new Agent({ llm: chatModel(), aggregator: new TokenWindowAggregator(options(summarizer)) });
    expect(() => {
      for (let i = 0; i < 8; i++) sync.call(question(i));
    }).toThrow(/summarises with an async model/);
  });

  it('refuses bad summarize options', () => {
    const llm = chatModel();
    const make = (summarize: object) => () =>
      new TokenWindowAggregator({ maxTokens: 1_000, summarize: summarize as never });
    expect(make({ llm: {}, triggerTokens: 100 })).toThrow(ConfigurationError);
    expect(make({ llm, triggerTokens: 0 })).toThrow(ConfigurationError);
    expect(make({ llm, triggerTokens: 100, keepTokens: 100 })).toThrow(ConfigurationError);
    expect(make({ llm, triggerTokens: 5_000, keepTokens: 2_000 })).toThrow(ConfigurationError);
  });
});
