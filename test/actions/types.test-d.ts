import {
  ActionExecutor,
  ActionPreprocessor,
  type ActionReturn,
  AgentMessage,
  AsyncActionExecutor,
  asyncTool,
  Hook,
  type HookExecutor,
  MessageLogger,
  tool,
  toolkit,
} from 'lagent-ts';
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
    // @ts-expect-error a run that may return a Promise is refused too
    tool({ name: 'maybe', run: () => (Math.random() > 0.5 ? 1 : Promise.resolve(1)) });
  });

  it('a sync tool may return any or unknown', () => {
    tool({ name: 'parsed', parameters: z.object({ text: z.string() }), run: ({ text }) => JSON.parse(text) });
    tool({ name: 'opaque', run: (): unknown => 1 });
    tool({ name: 'loose', run: (args): any => args });
  });

  it('an executor reply carries the ActionReturn', () => {
    const executor = new ActionExecutor({ actions: [tool({ name: 'x', run: () => 1 })] });
    const reply = executor.call({ content: { name: 'x', parameters: {} } });
    expectTypeOf(reply.content).toEqualTypeOf<ActionReturn>();
    expectTypeOf(reply).toEqualTypeOf<AgentMessage<ActionReturn, null>>();
    expectTypeOf(new AsyncActionExecutor({ actions: [] }).call('x')).toEqualTypeOf<
      Promise<AgentMessage<ActionReturn, null>>
    >();
    // A hook that only watches keeps it.
    const logged = new ActionExecutor({ actions: [], hooks: [new MessageLogger()] });
    expectTypeOf(logged.call('x').content).toEqualTypeOf<ActionReturn>();
  });

  it('an afterAction hook that replaces the reply makes its content open', () => {
    const converted = new ActionExecutor({ actions: [], hooks: [new ActionPreprocessor()] });
    expectTypeOf(converted.call('x').content).toEqualTypeOf<unknown>();
    class ToText extends Hook {
      override afterAction(_executor: HookExecutor, message: AgentMessage<ActionReturn>) {
        return new AgentMessage<string, null>({ sender: message.sender, content: message.content.toText() });
      }
    }
    const texts = new AsyncActionExecutor({ actions: [], hooks: [new ToText(), new MessageLogger()] });
    expectTypeOf(texts.call('x')).resolves.toEqualTypeOf<AgentMessage<ActionReturn | string, null>>();
  });

  it('ActionExecutor takes sync hooks only; AsyncActionExecutor both', () => {
    class Slow extends Hook {
      override async beforeAction(_executor: HookExecutor, message: AgentMessage) {
        return message;
      }
    }
    // @ts-expect-error an async hook in a sync executor does not compile
    new ActionExecutor({ actions: [], hooks: [new Slow()] });
    const executor = new ActionExecutor({ actions: [], hooks: [new MessageLogger()] });
    // @ts-expect-error registerHook refuses it too
    executor.registerHook(new Slow());
    executor.registerHook(new ActionPreprocessor());
    new AsyncActionExecutor({ actions: [], hooks: [new Slow(), new MessageLogger()] }).registerHook(
      new Slow(),
    );
  });

  it('sync calls return values, async ones promises', () => {
    const executor = new ActionExecutor({ actions: [tool({ name: 'x', run: () => 1 })] });
    expectTypeOf(executor.forward('x')).toEqualTypeOf<ActionReturn>();
    const asyncExecutor = new AsyncActionExecutor({ actions: [] });
    expectTypeOf(asyncExecutor.forward('x')).toEqualTypeOf<Promise<ActionReturn>>();
  });
});
