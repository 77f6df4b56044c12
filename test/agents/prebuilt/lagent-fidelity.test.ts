import { AsyncMathCoder, ConfigurationError, MathCoder, ReAct, tool } from 'lagent-ts';
import { AsyncMockLLM, MockLLM } from 'lagent-ts/testing';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';

/* What a Lagent user porting code meets: the loops stop, and refuse, as Lagent's do. */

let runs = 0;
const lookup = tool({
  name: 'Lookup',
  description: 'looks something up',
  parameters: z.object({ q: z.string() }),
  run: ({ q }) => {
    runs++;
    return `found ${q}`;
  },
});

/** A step that calls the tool while its thought mentions a conclusion; then a final answer. */
const script = () => [
  '{"thought_process": "no conclusion yet, look it up", "action": {"name": "Lookup", "parameters": {"q": "x"}}}',
  '{"thought_process": "done", "conclusion": "x"}',
];

describe("ReAct's finish condition", () => {
  it("with compat: 'lagent', stops on the word conclusion in the model's text, as Lagent's does", () => {
    runs = 0;
    const agent = new ReAct({
      llm: new MockLLM({ responses: script() }),
      actions: [lookup],
      compat: 'lagent',
    });
    const reply = agent.call('what is x?');
    expect(runs).toBe(0);
    expect(reply.content).toContain('no conclusion yet');
    expect(reply.formatted).toMatchObject({ action: { name: 'Lookup' } });
  });

  it('without compat, only a conclusion field ends the loop', () => {
    runs = 0;
    const agent = new ReAct({ llm: new MockLLM({ responses: script() }), actions: [lookup] });
    expect(agent.call('what is x?').formatted).toEqual({ thought_process: 'done', conclusion: 'x' });
    expect(runs).toBe(1);
  });

  it('a reply the format cannot read goes on as a NoAction turn, even when it says conclusion', () => {
    const agent = new ReAct({
      llm: new MockLLM({
        responses: ['my conclusion is {oops', '{"thought_process": "ok", "conclusion": "y"}'],
      }),
      actions: [lookup],
      compat: 'lagent',
    });
    expect(agent.call('y?').formatted).toEqual({ thought_process: 'ok', conclusion: 'y' });
  });
});

describe('MathCoder without an interpreter', () => {
  it('is a ConfigurationError naming the interpreter to pass (Lagent defaults to IPythonInteractive)', () => {
    const create = () => new MathCoder({ llm: new MockLLM({ responses: [] }) } as never);
    expect(create).toThrow(ConfigurationError);
    expect(create).toThrow(/new IPythonInteractive\(.*\) from lagent-ts\/tools/);
    expect(
      () => new AsyncMathCoder({ llm: new AsyncMockLLM({ responses: [] }), interpreter: [] } as never),
    ).toThrow(/MathCoder needs an interpreter/);
  });
});
