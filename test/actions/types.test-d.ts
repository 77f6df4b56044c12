import { ActionExecutor, type ActionReturn, AsyncActionExecutor, asyncTool, tool, toolkit } from 'lagent-ts';
import { describe, expectTypeOf, it } from 'vitest';
import { z } from 'zod';

describe('action types', () => {
  it('types run arguments from the zod schema', () => {
    tool({
      name: 'add',
      parameters: z.object({ a: z.number(), b: z.string().optional() }),
      run: (args) => {
        expectTypeOf(args).toEqualTypeOf<{ a: number; b?: string | undefined }>();
        return args.a;
      },
    });
    toolkit({
      name: 'Kit',
      apis: {
        one: { parameters: z.object({ x: z.number() }), run: ({ x }) => expectTypeOf(x).toBeNumber() },
        two: { parameters: z.object({ y: z.string() }), run: ({ y }) => expectTypeOf(y).toBeString() },
      },
    });
  });

  it('a sync tool cannot return a promise, and ActionExecutor refuses async tools', () => {
    // @ts-expect-error a sync tool's run must not return a Promise
    tool({ name: 'bad', run: async () => 1 });
    const slow = asyncTool({ name: 'slow', run: async () => 1 });
    // @ts-expect-error ActionExecutor takes sync actions only
    new ActionExecutor({ actions: [slow] });
    new AsyncActionExecutor({ actions: [slow, tool({ name: 'sync', run: () => 1 })] });
  });

  it('sync calls return values, async ones promises', () => {
    const executor = new ActionExecutor({ actions: [tool({ name: 'x', run: () => 1 })] });
    expectTypeOf(executor.forward('x')).toEqualTypeOf<ActionReturn>();
    const asyncExecutor = new AsyncActionExecutor({ actions: [] });
    expectTypeOf(asyncExecutor.forward('x')).toEqualTypeOf<Promise<ActionReturn>>();
  });
});
