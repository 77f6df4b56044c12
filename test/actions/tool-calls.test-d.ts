import {
  ActionExecutor,
  type ActionReturn,
  AgentMessage,
  AsyncActionExecutor,
  hasToolCalls,
  MessageLogger,
  type ToolCallsFormatted,
  type ToolCallsMessage,
  type ToolResultsMessage,
  tool,
} from 'lagent-ts';
import { describe, expectTypeOf, it } from 'vitest';

const executor = new ActionExecutor({ actions: [tool({ name: 'x', run: () => 1 })] });
const asyncExecutor = new AsyncActionExecutor({ actions: [], hooks: [new MessageLogger()] });

describe('executor replies to native tool calls', () => {
  it('a tool-call message gets the results, a text call one ActionReturn', () => {
    const message = new AgentMessage<string, ToolCallsFormatted>({
      content: '',
      formatted: { toolCalls: [{ id: 'a', name: 'x', arguments: {} }] },
    });
    // Its formatted may still be null: either reply, until hasToolCalls says which.
    expectTypeOf(executor.call(message).content).toEqualTypeOf<ActionReturn | ActionReturn[]>();
    if (!hasToolCalls(message)) return;
    const calls = message;
    expectTypeOf(executor.call(calls)).toEqualTypeOf<ToolResultsMessage>();
    expectTypeOf(executor.call(calls).content).toEqualTypeOf<ActionReturn[]>();
    expectTypeOf(executor.call(calls).formatted).toEqualTypeOf<ToolCallsFormatted>();
    expectTypeOf(asyncExecutor.call(calls)).resolves.toEqualTypeOf<ToolResultsMessage>();
    expectTypeOf(executor.call('x')).toEqualTypeOf<AgentMessage<ActionReturn, null>>();
    expectTypeOf(
      executor.call({ content: { name: 'x', parameters: {} } }).content,
    ).toEqualTypeOf<ActionReturn>();
    // A message whose formatted is unknown may hold either kind of call, and so may the reply.
    expectTypeOf(executor.call(new AgentMessage({ content: 'x' }) as AgentMessage).content).toEqualTypeOf<
      ActionReturn | ActionReturn[]
    >();
  });

  it('a message whose formatted is open may get either reply', () => {
    const open = new AgentMessage<string, unknown>({ content: '' });
    expectTypeOf(executor.call(open).content).toEqualTypeOf<ActionReturn | ActionReturn[]>();
    const either = new AgentMessage<string, ToolCallsFormatted | { thought: string }>({ content: '' });
    expectTypeOf(executor.call(either).content).toEqualTypeOf<ActionReturn | ActionReturn[]>();
    const text = new AgentMessage<string, { thought: string }>({ content: '' });
    expectTypeOf(executor.call(text).content).toEqualTypeOf<ActionReturn>();
    const plain = { content: '', formatted: { toolCalls: [{ id: 'a', name: 'x', arguments: {} }] } };
    expectTypeOf(executor.call(plain).content).toEqualTypeOf<ActionReturn[]>();
  });

  it('hasToolCalls narrows formatted to the calls', () => {
    const message = new AgentMessage<string, unknown>({ content: '' });
    if (hasToolCalls(message)) {
      expectTypeOf(message).toExtend<ToolCallsMessage<string>>();
      expectTypeOf(message.formatted.toolCalls[0]!.id).toBeString();
    }
  });
});
