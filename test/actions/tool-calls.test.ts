import {
  ActionExecutor,
  ActionPreprocessor,
  ActionReturn,
  ActionStatusCode,
  AgentMessage,
  AsyncActionExecutor,
  asyncTool,
  asyncToolkit,
  Hook,
  type HookExecutor,
  hasToolCalls,
  type ToolCall,
  type ToolCallsFormatted,
  type ToolCallsMessage,
  tool,
  toolkit,
} from 'lagent-ts';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { Held } from '../helpers/held';
import { add, resultOf } from '../helpers/tools';

const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener('abort', () => {
      clearTimeout(timer);
      reject(signal.reason);
    });
  });

const callsOf = (...toolCalls: ToolCall[]) =>
  new AgentMessage<string, ToolCallsFormatted>({
    sender: 'Agent',
    content: '',
    formatted: { toolCalls },
  }) as ToolCallsMessage<string>;

const calculator = toolkit({
  name: 'Calculator',
  apis: {
    mul: { parameters: z.object({ a: z.number(), b: z.number() }), run: ({ a, b }) => a * b },
    neg: { parameters: z.object({ a: z.number() }), run: ({ a }) => -a },
  },
});

/** An async tool that waits `ms` (aborted by its signal) and answers `text`; it records its signal. */
function waiting(signals: AbortSignal[] = []) {
  return asyncTool({
    name: 'wait',
    parameters: z.object({ ms: z.number(), text: z.string() }),
    run: async ({ ms, text }, { signal }) => {
      if (signal) signals.push(signal);
      await sleep(ms, signal);
      return text;
    },
  });
}

describe('hasToolCalls', () => {
  it('is true for a non-empty list of calls with string ids and names only', () => {
    expect(hasToolCalls(callsOf({ id: 'a', name: 'add', arguments: {} }))).toBe(true);
    expect(hasToolCalls(callsOf())).toBe(false);
    expect(hasToolCalls(new AgentMessage({ content: 'hi' }))).toBe(false);
    expect(hasToolCalls(new AgentMessage({ content: '', formatted: { toolCalls: [{ name: 'add' }] } }))).toBe(
      false,
    );
    expect(hasToolCalls(new AgentMessage({ content: '', formatted: { toolCalls: 'add' } }))).toBe(false);
    expect(hasToolCalls(undefined)).toBe(false);
  });
});

describe('ActionExecutor with native tool calls', () => {
  it('runs every call in order and answers with one message: results in call order, the calls as formatted', () => {
    const order: string[] = [];
    const record = tool({
      name: 'record',
      parameters: z.object({ tag: z.string() }),
      run: ({ tag }) => {
        order.push(tag);
        return tag;
      },
    });
    const executor = new ActionExecutor({ actions: [add, calculator, record] });
    const message = callsOf(
      { id: 'c1', name: 'record', arguments: { tag: 'first' } },
      { id: 'c2', name: 'add', arguments: '{"a": 1, "b": 2}' },
      { id: 'c3', name: 'Calculator__mul', arguments: { a: 3, b: 4 } },
      { id: 'c4', name: 'Calculator.neg', arguments: { a: 5 } },
      { id: 'c5', name: 'record', arguments: { tag: 'last' } },
    );
    const reply = executor.call(message);
    expect(reply.sender).toBe('ActionExecutor');
    expect(reply.content).toHaveLength(5);
    expect(reply.content.every((result) => result instanceof ActionReturn)).toBe(true);
    expect(reply.content.map((result) => result.toText())).toEqual(['first', '3', '12', '-5', 'last']);
    expect(reply.formatted.toolCalls.map((call) => call.id)).toEqual(['c1', 'c2', 'c3', 'c4', 'c5']);
    expect(reply.formatted.toolCalls[1]).toEqual({ id: 'c2', name: 'add', arguments: '{"a": 1, "b": 2}' });
    expect(order).toEqual(['first', 'last']);
    // The input is not modified and the reply shares no call object with it.
    expect(reply.formatted.toolCalls[0]).not.toBe(message.formatted.toolCalls[0]);
    expect(message.formatted.toolCalls).toHaveLength(5);
  });

  it('answers an unknown tool, invalid arguments and non-JSON arguments with error results, never a throw', () => {
    const executor = new ActionExecutor({ actions: [add, calculator] });
    const reply = executor.call(
      callsOf(
        { id: 'u', name: 'serch', arguments: { q: 'x' } },
        { id: 'i', name: 'add', arguments: { a: 1, b: 'two' } },
        { id: 'j', name: 'add', arguments: '{"a": 1, "b":' },
        { id: 'k', name: 'add', arguments: '[1, 2]' },
        { id: 'l', name: 'Calculator__mul', arguments: 'three times four' },
        { id: 'm', name: 'Calculator__pow', arguments: { a: 1 } },
        { id: 'n', name: 'add', arguments: 42 as unknown as string },
        { id: 'o', name: 'add', arguments: '' },
      ),
    );
    const [unknown, invalid, broken, array, text, api, number, empty] = reply.content;
    expect(unknown!.state).toBe(ActionStatusCode.API_ERROR);
    expect(unknown!.errmsg).toContain('There is no tool named "serch"');
    expect(invalid!.state).toBe(ActionStatusCode.ARGS_ERROR);
    expect(invalid!.errmsg).toMatch(/Invalid arguments for add: .*\bb\b/);
    expect(broken!.state).toBe(ActionStatusCode.ARGS_ERROR);
    expect(broken!.errmsg).toContain('Invalid arguments for add: the arguments must be a JSON object');
    expect(broken!.errmsg).toContain('is not valid JSON');
    expect(broken!.errmsg).toContain('It takes');
    expect(array!.state).toBe(ActionStatusCode.ARGS_ERROR);
    expect(array!.errmsg).toContain('must be a JSON object, got an array');
    expect(text!.state).toBe(ActionStatusCode.ARGS_ERROR);
    expect(text!.errmsg).toContain('Invalid arguments for Calculator__mul');
    expect(api!.state).toBe(ActionStatusCode.API_ERROR);
    expect(api!.errmsg).toContain('invalid API');
    expect(number!.state).toBe(ActionStatusCode.ARGS_ERROR);
    expect(empty!.state).toBe(ActionStatusCode.ARGS_ERROR); // {} lacks a and b: zod names them
    expect(empty!.errmsg).toMatch(/\ba\b/);
    expect(reply.formatted.toolCalls.map((call) => call.id)).toEqual([
      'u',
      'i',
      'j',
      'k',
      'l',
      'm',
      'n',
      'o',
    ]);
  });

  it('answers arguments that cannot even be read with an error result', () => {
    const hostile = new Proxy(
      {},
      {
        getPrototypeOf() {
          throw new Error('no prototype for you');
        },
      },
    );
    const executor = new ActionExecutor({ actions: [add] });
    const reply = executor.call(
      callsOf({ id: 'a', name: 'add', arguments: hostile as Record<string, unknown> }),
    );
    expect(reply.content[0]!.state).toBe(ActionStatusCode.ARGS_ERROR);
    expect(reply.content[0]!.errmsg).toContain('could not be read');
  });

  it('does not hand raw text to a tool that takes free text (fromText): native arguments are JSON', () => {
    let ran = false;
    const shell = tool({
      name: 'shell',
      parameters: z.object({ command: z.string() }),
      fromText: (command) => ({ command }),
      run: () => {
        ran = true;
        return 'ran';
      },
    });
    const executor = new ActionExecutor({ actions: [shell] });
    const reply = executor.call(callsOf({ id: 'a', name: 'shell', arguments: '{"command": "rm -rf /' }));
    expect(ran).toBe(false);
    expect(reply.content[0]!.state).toBe(ActionStatusCode.ARGS_ERROR);
    // The text protocol keeps its free-text arguments.
    expect(executor.forward('shell', 'ls').formatResult()).toBe('ran');
  });

  it('runs the hooks once around the whole message', () => {
    const seen: string[] = [];
    class Watch extends Hook {
      override beforeAction(_executor: HookExecutor, message: AgentMessage) {
        seen.push(`before ${(message.formatted as ToolCallsFormatted).toolCalls.length}`);
      }
      override afterAction(_executor: HookExecutor, message: AgentMessage) {
        seen.push(`after ${(message.content as ActionReturn[]).length}`);
      }
    }
    const executor = new ActionExecutor({ actions: [add], hooks: [new Watch()] });
    executor.call(
      callsOf({ id: 'a', name: 'add', arguments: { a: 1, b: 1 } }, { id: 'b', name: 'add', arguments: {} }),
    );
    expect(seen).toEqual(['before 2', 'after 2']);
  });

  it('still runs the calls behind an ActionPreprocessor hook', () => {
    const executor = new ActionExecutor({ actions: [add], hooks: [new ActionPreprocessor()] });
    const reply = executor.call(callsOf({ id: 'a', name: 'add', arguments: { a: 2, b: 5 } }));
    expect((reply.content as ActionReturn[]).map((result) => result.toText())).toEqual(['7']);
  });

  it('keeps the text protocol: a call in the content, a FunctionCall, JSON text', () => {
    const executor = new ActionExecutor({ actions: [add] });
    const object = executor.call({ sender: 'Agent', content: { name: 'add', parameters: { a: 1, b: 2 } } });
    expect(object.content).toBeInstanceOf(ActionReturn);
    expect(object.content.formatResult()).toBe('3');
    expect(object.formatted).toBeNull();
    const json = executor.call(
      new AgentMessage({ content: '{"name": "add", "parameters": {"a": 2, "b": 2}}' }),
    );
    expect(resultOf(json).formatResult()).toBe('4');
    // An empty list of calls is no native call: the content is read as before.
    const empty = executor.call(
      new AgentMessage({
        content: { name: 'add', parameters: { a: 3, b: 3 } },
        formatted: { toolCalls: [] },
      }),
    );
    expect((empty.content as unknown as ActionReturn).formatResult()).toBe('6');
  });

  it('reports a promise from a tool in a sync call as an error result', () => {
    const sneaky = tool({ name: 'sneaky', run: (() => Promise.resolve(1)) as unknown as () => number });
    const executor = new ActionExecutor({ actions: [sneaky] });
    const reply = executor.call(callsOf({ id: 'a', name: 'sneaky', arguments: {} }));
    expect(reply.content[0]!.state).toBe(ActionStatusCode.API_ERROR);
    expect(reply.content[0]!.errmsg).toContain('AsyncActionExecutor');
  });
});

describe('AsyncActionExecutor with native tool calls', () => {
  it('runs the calls in parallel: both tools are running before either answers', async () => {
    const held = new Held();
    const gated = asyncTool({
      name: 'gated',
      parameters: z.object({ text: z.string() }),
      run: async ({ text }, { signal }) => held.wait(text, signal),
    });
    const executor = new AsyncActionExecutor({ actions: [gated] });
    const pending = executor.call(
      callsOf(
        { id: 'a', name: 'gated', arguments: { text: 'one' } },
        { id: 'b', name: 'gated', arguments: { text: 'two' } },
      ),
    );
    // One after another, the second would start only once the first answered.
    await held.until(2);
    held.release();
    const reply = await pending;
    expect(reply.content.map((result) => result.toText())).toEqual(['one', 'two']);
  });

  it('keeps the results in call order when a later call finishes first', async () => {
    const executor = new AsyncActionExecutor({ actions: [waiting(), add] });
    const reply = await executor.call(
      callsOf(
        { id: 'slow', name: 'wait', arguments: { ms: 60, text: 'slow' } },
        { id: 'fast', name: 'wait', arguments: { ms: 5, text: 'fast' } },
        { id: 'sync', name: 'add', arguments: { a: 1, b: 1 } },
      ),
    );
    expect(reply.content.map((result) => result.toText())).toEqual(['slow', 'fast', '2']);
    expect(reply.formatted.toolCalls.map((call) => call.id)).toEqual(['slow', 'fast', 'sync']);
  });

  it('answers unknown tools and bad arguments with error results among good ones', async () => {
    const executor = new AsyncActionExecutor({ actions: [waiting()] });
    const reply = await executor.call(
      callsOf(
        { id: 'a', name: 'nope', arguments: {} },
        { id: 'b', name: 'wait', arguments: { ms: 'soon', text: 'x' } },
        { id: 'c', name: 'wait', arguments: 'not json' },
        { id: 'd', name: 'wait', arguments: { ms: 1, text: 'ok' } },
      ),
    );
    expect(reply.content.map((result) => result.state)).toEqual([
      ActionStatusCode.API_ERROR,
      ActionStatusCode.ARGS_ERROR,
      ActionStatusCode.ARGS_ERROR,
      ActionStatusCode.SUCCESS,
    ]);
  });

  it('aborting during parallel tools aborts every tool signal and rejects', async () => {
    const signals: AbortSignal[] = [];
    const executor = new AsyncActionExecutor({ actions: [waiting(signals)] });
    const controller = new AbortController();
    const pending = executor.call(
      callsOf(
        { id: 'a', name: 'wait', arguments: { ms: 5_000, text: 'a' } },
        { id: 'b', name: 'wait', arguments: { ms: 5_000, text: 'b' } },
      ),
      { signal: controller.signal },
    );
    await expect.poll(() => signals.length).toBe(2);
    expect(signals.some((signal) => signal.aborted)).toBe(false);
    const reason = new Error('stop');
    controller.abort(reason);
    await expect(pending).rejects.toBe(reason);
    expect(signals.every((signal) => signal.aborted)).toBe(true);
  });

  it('aborts every tool signal with a timeout too, and each call has its own timeout', async () => {
    const signals: AbortSignal[] = [];
    const executor = new AsyncActionExecutor({ actions: [waiting(signals)], timeoutMs: 100 });
    const reply = await executor.call(
      callsOf(
        { id: 'late', name: 'wait', arguments: { ms: 5_000, text: 'late' } },
        { id: 'soon', name: 'wait', arguments: { ms: 10, text: 'soon' } },
      ),
    );
    expect(reply.content[0]!.state).toBe(ActionStatusCode.API_ERROR);
    expect(reply.content[0]!.errmsg).toContain('timed out');
    expect(reply.content[1]!.toText()).toBe('soon');
    // One call's timeout aborts that call's signal only.
    expect(signals[0]).not.toBe(signals[1]);
    expect(signals[0]!.aborted).toBe(true);
    expect(signals[1]!.aborted).toBe(false);

    const controller = new AbortController();
    const pending = executor.call(
      callsOf(
        { id: 'a', name: 'wait', arguments: { ms: 5_000, text: 'a' } },
        { id: 'b', name: 'wait', arguments: { ms: 5_000, text: 'b' } },
      ),
      { signal: controller.signal, timeoutMs: 10_000 },
    );
    await expect.poll(() => signals.length).toBe(4);
    controller.abort(new Error('stop'));
    await expect(pending).rejects.toThrow('stop');
    expect(signals.slice(2).map((signal) => signal.aborted)).toEqual([true, true]);
  });

  it('runs async hooks once around the whole message', async () => {
    const seen: string[] = [];
    class Watch extends Hook {
      override async beforeAction(_executor: HookExecutor, message: AgentMessage) {
        await sleep(1);
        seen.push(`before ${(message.formatted as ToolCallsFormatted).toolCalls.length}`);
        return undefined;
      }
      override afterAction(_executor: HookExecutor, message: AgentMessage) {
        seen.push(`after ${(message.content as ActionReturn[]).length}`);
      }
    }
    const kit = asyncToolkit({
      name: 'Kit',
      apis: { echo: { parameters: z.object({ text: z.string() }), run: async ({ text }) => text } },
    });
    const executor = new AsyncActionExecutor({ actions: [kit], hooks: [new Watch()] });
    const reply = await executor.call(
      callsOf(
        { id: 'a', name: 'Kit__echo', arguments: { text: 'x' } },
        { id: 'b', name: 'Kit.echo', arguments: '{"text": "y"}' },
      ),
    );
    expect(reply.content.map((result) => result.toText())).toEqual(['x', 'y']);
    expect(seen).toEqual(['before 2', 'after 2']);
  });

  it('survives a JSON round trip of the reply: results revived, calls kept', async () => {
    const executor = new AsyncActionExecutor({ actions: [add] });
    const reply = await executor.call(callsOf({ id: 'a', name: 'add', arguments: { a: 1, b: 2 } }));
    const back = AgentMessage.from(JSON.parse(JSON.stringify(reply.toJSON())));
    expect(hasToolCalls(back)).toBe(true);
    expect(back.formatted).toEqual({ toolCalls: [{ id: 'a', name: 'add', arguments: { a: 1, b: 2 } }] });
    const results = back.content as unknown[];
    expect(results[0]).toBeInstanceOf(ActionReturn);
    expect((results[0] as ActionReturn).toText()).toBe('3');
  });
});
