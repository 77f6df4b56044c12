import { AsyncMathCoder, MATH_CODER_PROMPTS, MathCoder, tool } from 'lagent-ts';
import { AsyncMockLLM, MockLLM } from 'lagent-ts/testing';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { interpreterCall } from '../../helpers/internlm-replies';
import { asyncFakePython } from '../../helpers/tools';

/** A stand-in interpreter: evaluates `print(<arithmetic>)`. */
const python = tool({
  name: 'IPythonInteractive',
  description: 'Runs Python code',
  parameters: z.object({ command: z.string() }),
  run: ({ command }) => {
    const expression = /print\(([\d\s+*/().-]+)\)/.exec(command)?.[1];
    if (!expression) throw new Error('NameError: only print(<arithmetic>) runs here');
    return String(Function(`"use strict"; return (${expression});`)());
  },
});

describe('MathCoder', () => {
  it("tells the model Lagent's math instruction as the interpreter's system message, and runs its code", () => {
    const llm = new MockLLM({
      responses: [interpreterCall('print(63 * -63)'), 'The product is $\\boxed{-3969}$.'],
    });
    const coder = new MathCoder({ llm, interpreter: python });
    expect(coder.call('Find the product.').content).toBe('The product is $\\boxed{-3969}$.');
    const [first, second] = llm.calls;
    expect(first!.messages).toEqual([
      { role: 'system', content: MATH_CODER_PROMPTS.en.replace('{{}}', '{}'), name: 'interpreter' },
      { role: 'user', content: 'Find the product.' },
    ]);
    expect(first!.messages[0]!.content).toContain('\\boxed{}');
    expect(second!.messages.at(-1)).toEqual({ role: 'environment', content: '-3969', name: 'interpreter' });
    expect(coder.pluginExecutor).toBeUndefined();
  });

  it('speaks Chinese with language: "zh"', () => {
    const llm = new MockLLM({ responses: ['ok'] });
    new MathCoder({ llm, interpreter: python, language: 'zh' }).call('x');
    expect(llm.calls[0]!.messages[0]!.content).toBe(MATH_CODER_PROMPTS.zh.replace('{{}}', '{}'));
  });

  it('reports interpreter errors to the model and stops after 6 turns by default', () => {
    const llm = new MockLLM({ responses: () => interpreterCall('import sympy') });
    const coder = new MathCoder({ llm, interpreter: python });
    const reply = coder.call('loop');
    expect(llm.calls).toHaveLength(6);
    expect(llm.calls[1]!.messages.at(-1)!.content).toMatch(/NameError: only print/);
    expect(reply.extraInfo).toEqual({ maxTurnReached: true, maxTurn: 6 });
  });

  it('answers a plugin call, which it has no tools for, with a turn the model sees', () => {
    const llm = new MockLLM({
      responses: ['<|action_start|><|plugin|>\n{"name": "Search", "parameters": {}}<|action_end|>\n', 'ok'],
    });
    expect(new MathCoder({ llm, interpreter: python }).call('x').content).toBe('ok');
    expect(llm.calls[1]!.messages.at(-1)!.content).toMatch(
      /^The reply has <\|action_start\|> but no complete tool call/,
    );
  });
});

describe('AsyncMathCoder', () => {
  it('runs an async interpreter', async () => {
    const llm = new AsyncMockLLM({ responses: [interpreterCall('print(1)'), '$\\boxed{1}$'] });
    const coder = new AsyncMathCoder({ llm, interpreter: asyncFakePython });
    expect((await coder.call('x')).content).toBe('$\\boxed{1}$');
    expect(llm.calls[1]!.messages.at(-1)!.content).toBe('ran print(1)');
    expect(Object.keys(coder.stateDict())).toEqual(['memory', 'agent.memory']);
  });
});
