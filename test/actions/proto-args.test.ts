import { ActionExecutor, ActionStatusCode, AgentMessage, AsyncActionExecutor, tool } from 'lagent-ts';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { resultOf } from '../helpers/tools';

const ARGUMENTS = '{"query": "x", "__proto__": {"isAdmin": true}}';

function ownProto(value: unknown): unknown {
  return Object.getOwnPropertyDescriptor(value as object, '__proto__')?.value;
}

describe('executor args keep "__proto__" as data', () => {
  it('a loose schema passes it to the tool as an own key, with defaults filled in', () => {
    let received: Record<string, unknown> | undefined;
    const loose = tool({
      name: 'loose',
      parameters: z.looseObject({ query: z.string(), limit: z.number().default(3) }),
      run: (args) => {
        received = args;
        return 'ok';
      },
    });
    const result = new ActionExecutor({ actions: [loose] }).forward('loose', ARGUMENTS);
    expect(result.state).toBe(ActionStatusCode.SUCCESS);
    expect(Object.getPrototypeOf(received)).toBe(Object.prototype);
    expect(received!.isAdmin).toBeUndefined();
    expect(received!.limit).toBe(3);
    expect(ownProto(received)).toEqual({ isAdmin: true });
    // ActionReturn.args is what the model sent: no default, "__proto__" still a key.
    expect(Object.keys(result.args!)).toEqual(['query', '__proto__']);
    expect(result.args!.isAdmin).toBeUndefined();
    expect(ownProto(result.args)).toEqual({ isAdmin: true });
  });

  it('a catchall is applied to it like any other unknown key', () => {
    const typed = tool({
      name: 'typed',
      parameters: z.object({ query: z.string() }).catchall(z.string()),
      run: () => 'ok',
    });
    const result = typed.call(ARGUMENTS);
    expect(result.state).toBe(ActionStatusCode.ARGS_ERROR);
    expect(result.errmsg).toContain('"__proto__"');
  });

  it('a strict schema refuses it as an unknown argument', async () => {
    const strict = tool({ name: 'strict', parameters: z.object({ query: z.string() }), run: () => 'ok' });
    const result = await new AsyncActionExecutor({ actions: [strict] }).forward('strict', ARGUMENTS);
    expect(result.state).toBe(ActionStatusCode.ARGS_ERROR);
    expect(result.errmsg).toContain('unknown argument "__proto__"');
    expect(result.args).toEqual({ inputs: ARGUMENTS, name: 'run' });
  });

  it('survives the message copies of executor.call', () => {
    const echo = tool({ name: 'echo', parameters: z.looseObject({}), run: (args) => args });
    const parameters = JSON.parse(ARGUMENTS);
    const reply = new ActionExecutor({ actions: [echo] }).call(
      new AgentMessage({ sender: 'Agent', content: { name: 'echo', parameters } }),
    );
    expect(resultOf(reply).formatResult()).toBe(ARGUMENTS.replaceAll(': ', ':').replaceAll(', ', ','));
    expect(ownProto(resultOf(reply).args)).toEqual({ isAdmin: true });
  });
});
