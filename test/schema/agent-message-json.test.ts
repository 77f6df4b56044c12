import {
  ActionReturn,
  ActionStatusCode,
  AgentMessage,
  AgentStatusCode,
  Memory,
  ToolStatusCode,
  ValidationError,
} from 'lagent-ts';
import { describe, expect, it } from 'vitest';

const LAGENT_ACTION_RETURN = {
  args: { command: 'print(1)' },
  url: null,
  type: 'IPythonInterpreter',
  result: [{ type: 'text', content: '1' }],
  errmsg: null,
  state: 0,
  thought: null,
  valid: 0,
};

function withoutValidOf<T extends { valid?: unknown }>(json: T): Omit<T, 'valid'> {
  const { valid: _, ...rest } = json;
  return rest;
}

function validationError(run: () => unknown): ValidationError {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(ValidationError);
    return error as ValidationError;
  }
  throw new Error('expected a ValidationError');
}

function nested(depth: number): unknown {
  let value: unknown = 'x';
  for (let i = 0; i < depth; i++) value = [value];
  return value;
}

describe('ActionReturn JSON', () => {
  it('isJSON recognises exactly the eight fields (or seven without valid) with the right types', () => {
    expect(ActionReturn.isJSON(LAGENT_ACTION_RETURN)).toBe(true);
    const { valid: _valid, ...withoutValid } = LAGENT_ACTION_RETURN;
    expect(ActionReturn.isJSON(withoutValid)).toBe(true);
    expect(ActionReturn.isJSON(new ActionReturn().toJSON())).toBe(true);
    expect(ActionReturn.isJSON({ ...LAGENT_ACTION_RETURN, valid: null })).toBe(true);
    expect(ActionReturn.isJSON({ ...LAGENT_ACTION_RETURN, extra: 1 })).toBe(false);
    const { thought: _, ...seven } = LAGENT_ACTION_RETURN;
    expect(ActionReturn.isJSON(seven)).toBe(false);
    expect(ActionReturn.isJSON({ ...LAGENT_ACTION_RETURN, state: '0' })).toBe(false);
    expect(ActionReturn.isJSON({ ...LAGENT_ACTION_RETURN, state: 0.5 })).toBe(false);
    expect(ActionReturn.isJSON({ ...LAGENT_ACTION_RETURN, result: [{ type: 'text' }] })).toBe(false);
    expect(ActionReturn.isJSON({ ...LAGENT_ACTION_RETURN, args: [] })).toBe(false);
    expect(ActionReturn.isJSON({ ...LAGENT_ACTION_RETURN, errmsg: 3 })).toBe(false);
    expect(ActionReturn.isJSON(new ActionReturn())).toBe(false);
    expect(ActionReturn.isJSON(null)).toBe(false);
  });

  it('from() builds one from a dump or a subset of fields, and names a bad field', () => {
    const back = ActionReturn.from(LAGENT_ACTION_RETURN);
    expect(back).toBeInstanceOf(ActionReturn);
    // `valid` is written only when it is not OPEN, its default.
    expect(back.toJSON()).toEqual(withoutValidOf(LAGENT_ACTION_RETURN));
    expect(ActionReturn.from({ ...LAGENT_ACTION_RETURN, valid: -2 }).toJSON()).toEqual({
      ...LAGENT_ACTION_RETURN,
      valid: -2,
    });
    expect(back.formatResult()).toBe('1');
    expect(ActionReturn.from({ errmsg: 'no', state: ActionStatusCode.API_ERROR })).toMatchObject({
      errmsg: 'no',
      state: -1002,
      result: null,
      valid: 0,
    });
    expect(validationError(() => ActionReturn.from({ state: 'ok' })).field).toBe('state');
    expect(validationError(() => ActionReturn.from({ nope: 1 })).field).toBe('nope');
    expect(validationError(() => ActionReturn.from('x')).field).toBe('(root)');
    const original = new ActionReturn({ args: { a: [1] } });
    const copy = ActionReturn.from(original);
    expect(copy).not.toBe(original);
    expect(copy.args).not.toBe(original.args);
  });
});

describe('AgentMessage.from and ActionReturns', () => {
  it('content in the ActionReturn JSON form comes back as an ActionReturn (also in a content list)', () => {
    const message = AgentMessage.from({ sender: 'ActionExecutor', content: LAGENT_ACTION_RETURN });
    expect(message.content).toBeInstanceOf(ActionReturn);
    expect((message.content as ActionReturn).formatResult()).toBe('1');
    const list = AgentMessage.from({ content: [LAGENT_ACTION_RETURN, { a: 1 }] });
    expect((list.content as unknown[])[0]).toBeInstanceOf(ActionReturn);
    expect((list.content as unknown[])[1]).toEqual({ a: 1 });
    const round = AgentMessage.from(JSON.parse(JSON.stringify(message)));
    expect(round.content).toBeInstanceOf(ActionReturn);
    expect(round.toJSON()).toEqual(message.toJSON());
  });

  it('objects that merely resemble one stay plain', () => {
    const almost = { ...LAGENT_ACTION_RETURN, extra: true };
    expect(AgentMessage.from({ content: almost }).content).toEqual(almost);
    expect(AgentMessage.from({ content: { state: 0 } }).content).toEqual({ state: 0 });
  });

  it('Memory.load revives them too', () => {
    const memory = new Memory();
    memory.load([{ content: LAGENT_ACTION_RETURN, sender: 'ActionExecutor' } as never]);
    expect(memory.getMemory()[0]!.content).toBeInstanceOf(ActionReturn);
  });
});

describe("AgentMessage JSON in Python Lagent's shape", () => {
  const message = new AgentMessage({
    sender: 'Agent',
    content: 'raw',
    formatted: { toolType: 'interpreter', thought: 'Compute.', action: 'print(1)', status: 1 },
    extraInfo: { step: 2 },
    streamState: AgentStatusCode.STREAM_ING,
  });

  it("toJSON({ format: 'lagent' }) writes snake_case fields and tool_type, in Lagent's order", () => {
    const json = message.toJSON({ format: 'lagent' });
    expect(json).toEqual({
      content: 'raw',
      sender: 'Agent',
      formatted: { tool_type: 'interpreter', thought: 'Compute.', action: 'print(1)', status: 1 },
      extra_info: { step: 2 },
      type: null,
      receiver: null,
      stream_state: 1,
    });
    expect(Object.keys(json)).toEqual([
      'content',
      'sender',
      'formatted',
      'extra_info',
      'type',
      'receiver',
      'stream_state',
    ]);
    expect(message.formatted).toHaveProperty('toolType');
  });

  it('JSON.stringify still writes camelCase (its key argument is not an option)', () => {
    expect(JSON.parse(JSON.stringify(message))).toEqual(message.toJSON());
    expect(JSON.parse(JSON.stringify({ list: [message] })).list[0]).toHaveProperty('extraInfo');
  });

  it('ActionReturn content is written as the dump Lagent writes, without the default valid', () => {
    const json = new AgentMessage({ content: ActionReturn.from(LAGENT_ACTION_RETURN) }).toJSON({
      format: 'lagent',
    });
    expect(JSON.parse(JSON.stringify(json)).content).toEqual(withoutValidOf(LAGENT_ACTION_RETURN));
  });

  it('a chunk of tool results carries no valid: 0, and reads back as the same ActionReturns', () => {
    const chunk = new AgentMessage({
      sender: 'ActionExecutor',
      content: [ActionReturn.from(LAGENT_ACTION_RETURN)],
    });
    const text = JSON.stringify(chunk);
    expect(text).not.toContain('valid');
    const back = AgentMessage.from(JSON.parse(text));
    expect(back.content).toEqual([ActionReturn.from(LAGENT_ACTION_RETURN)]);
  });

  it('from() reads a Lagent dump, with toolType in formatted', () => {
    const back = AgentMessage.from({
      content: 'raw',
      sender: 'Agent',
      formatted: { tool_type: 'interpreter', thought: 'Compute.', action: 'print(1)', status: 1 },
      extra_info: { step: 2 },
      type: null,
      receiver: null,
      stream_state: 1,
    });
    expect(back.toJSON()).toEqual(message.toJSON());
    expect(Object.keys(back.formatted as object)).toEqual(['toolType', 'thought', 'action', 'status']);
    const again = AgentMessage.from(JSON.parse(JSON.stringify(message.toJSON({ format: 'lagent' }))));
    expect(again.toJSON()).toEqual(message.toJSON());
  });

  it('renaming keeps a "__proto__" key of formatted as data', () => {
    const back = AgentMessage.from(
      JSON.parse(
        '{"content": "x", "formatted": {"__proto__": {"polluted": 1}, "tool_type": null, "thought": "", "status": 0}}',
      ),
    );
    const formatted = back.formatted as Record<string, unknown>;
    expect(Object.getPrototypeOf(formatted)).toBe(Object.prototype);
    expect(formatted.polluted).toBeUndefined();
    expect(Object.keys(formatted)).toEqual(['__proto__', 'toolType', 'thought', 'status']);
  });

  it('from() leaves formatted that is not a tool parser result alone', () => {
    expect(AgentMessage.from({ content: 'x', formatted: { tool_type: 'mine' } }).formatted).toEqual({
      tool_type: 'mine',
    });
  });

  it('one field in both shapes is a ValidationError naming it', () => {
    expect(
      validationError(() => AgentMessage.from({ content: 'x', extra_info: 1, extraInfo: 1 })).field,
    ).toBe('extraInfo');
    expect(
      validationError(() => AgentMessage.from({ content: 'x', stream_state: 0, streamState: 0 })).field,
    ).toBe('streamState');
    const formatted = {
      tool_type: 'a',
      toolType: 'a',
      thought: '',
      action: null,
      status: ToolStatusCode.NO_TOOL,
    };
    expect(validationError(() => AgentMessage.from({ content: 'x', formatted })).field).toBe(
      'formatted.tool_type',
    );
  });
});

describe('AgentMessage and nesting deeper than JSON can take', () => {
  it('from() throws a ValidationError naming the field, not a RangeError', () => {
    expect(validationError(() => AgentMessage.from({ content: nested(100_000) })).field).toBe('content');
    expect(validationError(() => AgentMessage.from({ content: 'x', formatted: nested(100_000) })).field).toBe(
      'formatted',
    );
    expect(
      validationError(() => AgentMessage.from({ content: 'x', extra_info: nested(100_000) })).field,
    ).toBe('extraInfo');
    expect(() => AgentMessage.from({ content: nested(513) })).toThrow(/512 levels/);
    expect(AgentMessage.from({ content: nested(512) }).content).toEqual(nested(512));
  });

  it('toJSON() throws a ValidationError for too deep or circular values', () => {
    expect(validationError(() => new AgentMessage({ content: nested(100_000) }).toJSON()).field).toBe(
      'content',
    );
    const cyclic: unknown[] = [];
    cyclic.push(cyclic);
    expect(() => new AgentMessage({ content: 'x', extraInfo: cyclic }).toJSON()).toThrow(/circular/);
  });

  it('from() still copies circular plain objects as before (they are not deep)', () => {
    const cyclic: Record<string, unknown> = { a: 1 };
    cyclic.self = cyclic;
    const message = AgentMessage.from({ content: cyclic });
    expect((message.content as Record<string, unknown>).self).toBe(message.content);
  });
});
