import fc from 'fast-check';
import {
  ActionExecutor,
  ActionReturn,
  AgentMessage,
  AsyncActionExecutor,
  asyncTool,
  toolkit,
} from 'lagent-ts';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { propertyRuns } from '../helpers/property-runs';
import { echo } from '../helpers/tools';

const calculator = toolkit({
  name: 'Calculator',
  apis: {
    add: { parameters: z.object({ a: z.number(), b: z.number() }), run: ({ a, b }) => a + b },
    tag: { parameters: z.object({ tags: z.array(z.string()).max(3) }), run: ({ tags }) => tags.join('|') },
  },
});

const names = fc.oneof(
  fc.constantFrom(
    'Calculator.add',
    'Calculator.tag',
    'Calculator',
    'Calculator.x',
    'echo',
    'echo.run',
    'NoAction',
    'FinishAction',
  ),
  fc.string(),
);

describe('executor properties', () => {
  it('never throws for any tool name and arguments; always answers with an ActionReturn', () => {
    const executor = new ActionExecutor({ actions: [calculator, echo] });
    fc.assert(
      fc.property(names, fc.oneof(fc.string(), fc.json(), fc.anything()), (name, parameters) => {
        const result = executor.forward(name, parameters);
        expect(result).toBeInstanceOf(ActionReturn);
        const reply = executor.call(new AgentMessage({ sender: 'Agent', content: { name, parameters } }));
        expect(reply.content).toBeInstanceOf(ActionReturn);
      }),
      { numRuns: propertyRuns(500) },
    );
  });

  it('returns every character a tool gives back', () => {
    const executor = new ActionExecutor({ actions: [echo] });
    fc.assert(
      fc.property(fc.string({ unit: 'grapheme' }), (text) => {
        expect(executor.forward('echo', { text }).formatResult()).toBe(text);
        expect(executor.forward('echo', JSON.stringify({ text })).formatResult()).toBe(text);
      }),
      { numRuns: propertyRuns(300) },
    );
  });

  it('async: never rejects for anything a tool throws or returns', async () => {
    const chaotic = asyncTool({
      name: 'chaotic',
      parameters: z.object({ mode: z.number() }),
      run: async ({ mode }) => {
        if (mode % 3 === 0) throw new Error(`failure ${mode}`);
        if (mode % 3 === 1) return Promise.reject(mode);
        return { mode };
      },
    });
    const executor = new AsyncActionExecutor({ actions: [chaotic] });
    await fc.assert(
      fc.asyncProperty(fc.integer(), async (mode) => {
        const result = await executor.forward('chaotic', { mode });
        expect(result).toBeInstanceOf(ActionReturn);
      }),
      { numRuns: propertyRuns(200) },
    );
  });
});
