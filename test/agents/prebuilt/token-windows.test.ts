import {
  AsyncFunctionCallingAgent,
  AsyncReAct,
  type ChatMessage,
  FunctionCallingAgent,
  InternLMToolAggregator,
  MathCoder,
  TokenWindowAggregator,
} from 'lagent-ts';
import { AsyncMockLLM, MockLLM } from 'lagent-ts/testing';
import { describe, expect, it } from 'vitest';
import { interpreterCall } from '../../helpers/internlm-replies';
import { echo, fakePython } from '../../helpers/tools';

/*
 * The prebuilt agents keep a tool-heavy session within a token window when given a windowing aggregator:
 * every prompt the model gets fits, however many tool turns the session holds.
 */

const WINDOW = 600;
const LONG = 'lorem ipsum dolor sit amet '.repeat(12);

/** The tokens of a prompt as the windows count them (the estimate: no model name). */
const counter = new MockLLM({ responses: [] });
const tokensOf = (prompt: readonly ChatMessage[]) => counter.countTokens(prompt);

describe('token windows of the prebuilt agents', () => {
  it('a function-calling agent takes an aggregator: a TokenWindowAggregator bounds every prompt', async () => {
    const prompts: ChatMessage[][] = [];
    const llm = new AsyncMockLLM({
      responses: (messages, _params, i) => {
        prompts.push(messages);
        // Two tool rounds, then an answer, on every call.
        return i % 3 === 2
          ? `answer ${i}: ${LONG}`
          : { content: '', toolCalls: [{ name: 'echo', arguments: { text: `${LONG} ${i}` } }] };
      },
    });
    const agent = new AsyncFunctionCallingAgent({
      llm,
      actions: [echo],
      aggregator: new TokenWindowAggregator({ maxTokens: WINDOW }),
    });
    for (let call = 0; call < 8; call++) await agent.call(`question ${call}: ${LONG}`, { sessionId: 's' });
    expect(prompts).toHaveLength(24);
    for (const prompt of prompts) expect(tokensOf(prompt)).toBeLessThanOrEqual(WINDOW);
    // The whole history is far beyond the window, and kept in memory.
    expect(agent.agent.memory!.get('s')!.getMemory().length).toBe(8 * 6);
  });

  it('the sync one too (the option passes to its model-facing sub-agent)', () => {
    const prompts: ChatMessage[][] = [];
    const llm = new MockLLM({
      responses: (messages, _params, i) => {
        prompts.push(messages);
        return i % 2 === 1
          ? 'done'
          : { content: '', toolCalls: [{ name: 'echo', arguments: { text: LONG } }] };
      },
    });
    const window = new TokenWindowAggregator({ maxTokens: WINDOW });
    const agent = new FunctionCallingAgent({ llm, actions: [echo], aggregator: window });
    expect(agent.agent.aggregator).toBe(window);
    for (let call = 0; call < 8; call++) agent.call(`q${call} ${LONG}`);
    for (const prompt of prompts) expect(tokensOf(prompt)).toBeLessThanOrEqual(WINDOW);
  });

  it('ReAct takes one for its select agent', async () => {
    const prompts: ChatMessage[][] = [];
    const llm = new AsyncMockLLM({
      responses: (messages, _params, i) => {
        prompts.push(messages);
        return i % 2 === 1
          ? JSON.stringify({ thought_process: LONG, conclusion: 'done' })
          : JSON.stringify({ thought_process: LONG, action: { name: 'echo', parameters: { text: LONG } } });
      },
    });
    const agent = new AsyncReAct({
      llm,
      actions: [echo],
      language: 'en',
      aggregator: new TokenWindowAggregator({ maxTokens: WINDOW }),
    });
    for (let call = 0; call < 6; call++) await agent.call(`q${call} ${LONG}`);
    for (const prompt of prompts) expect(tokensOf(prompt)).toBeLessThanOrEqual(WINDOW);
  });

  it("the InternLM agents' aggregator windows their history, results kept in the environment role", () => {
    const prompts: ChatMessage[][] = [];
    const llm = new MockLLM({
      responses: (messages, _params, i) => {
        prompts.push(messages);
        return i % 2 === 1 ? `The answer is \\boxed{${i}}.` : interpreterCall(`print("${LONG}")`, LONG);
      },
    });
    const agent = new MathCoder({
      llm,
      interpreter: fakePython,
      aggregator: new InternLMToolAggregator({ window: { maxTokens: 900 } }),
    });
    for (let call = 0; call < 8; call++) agent.call(`problem ${call}: ${LONG}`);
    const system = prompts[0]!.filter((message) => message.role === 'system');
    for (const prompt of prompts) {
      expect(tokensOf(prompt)).toBeLessThanOrEqual(900);
      // The instructions always; the newest turn always; a result never without its call.
      expect(prompt.slice(0, system.length)).toEqual(system);
      expect(prompt.at(-1)!.role).not.toBe('system');
      const first = prompt[system.length]!;
      expect(first.role).not.toBe('environment');
    }
    expect(prompts.at(-1)!.some((message) => message.role === 'environment')).toBe(true);
    // Without a window the same session's prompt is far longer.
    expect(
      tokensOf(
        new InternLMToolAggregator().aggregate(
          agent.agent.memory!.get(0),
          agent.agent.name,
          agent.agent.outputFormat,
          agent.agent.template,
        ),
      ),
    ).toBeGreaterThan(3 * 900);
  });

  it('a window given bad numbers is a ConfigurationError', () => {
    expect(() => new InternLMToolAggregator({ window: { maxTokens: 0 } })).toThrow(/window.maxTokens/);
    expect(() => new InternLMToolAggregator({ window: { maxTokens: 10, reserve: 10 } })).toThrow(
      /window.reserve/,
    );
  });
});
