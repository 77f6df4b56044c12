import {
  ActionExecutor,
  ActionReturn,
  ActionStatusCode,
  ActionValidCode,
  AgentMessage,
  asyncTool,
  ConfigurationError,
  FinishAction,
  Hook,
  HookError,
  type HookExecutor,
  InvalidAction,
  NoAction,
  type SessionId,
  type ToolResponse,
  tool,
  toolkit,
} from 'lagent-ts';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { echo, resultOf } from '../helpers/tools';

const calculator = toolkit({
  name: 'Calculator',
  description: 'Arithmetic',
  apis: {
    add: {
      description: 'a + b',
      parameters: z.object({ a: z.number(), b: z.number() }),
      run: ({ a, b }) => a + b,
    },
    div: {
      description: 'a / b',
      parameters: z.object({ a: z.number(), b: z.number() }),
      run: ({ a, b }) => {
        if (b === 0) throw new RangeError('division by zero');
        return a / b;
      },
    },
  },
});

const callOf = (name: string, parameters: unknown) =>
  new AgentMessage({ sender: 'Agent', content: { name, parameters } });

describe('ActionExecutor', () => {
  const executor = () => new ActionExecutor({ actions: [calculator, echo] });

  it('dispatches Name and Name.api calls and replies as ActionExecutor', () => {
    const reply = executor().call(callOf('Calculator.add', { a: 1, b: 2 }));
    expect(reply).toBeInstanceOf(AgentMessage);
    expect(reply.sender).toBe('ActionExecutor');
    expect(reply.content).toBeInstanceOf(ActionReturn);
    expect(resultOf(reply).formatResult()).toBe('3');
    expect(resultOf(executor().call(callOf('echo', { text: 'hi' }))).formatResult()).toBe('hi');
    expect(executor().forward('Calculator__add', { a: 2, b: 2 }).formatResult()).toBe('4');
  });

  it('accepts FunctionCall content, JSON text content, JSON-string and fenced parameters', () => {
    const ex = executor();
    expect(
      resultOf(
        ex.call(new AgentMessage({ content: { name: 'echo', parameters: '{"text": "a"}' } })),
      ).formatResult(),
    ).toBe('a');
    expect(
      resultOf(
        ex.call(new AgentMessage({ content: '{"name": "echo", "parameters": {"text": "b"}}' })),
      ).formatResult(),
    ).toBe('b');
    expect(
      resultOf(ex.call(callOf('Calculator.add', '```json\n{"a": 40, "b": 2}\n```'))).formatResult(),
    ).toBe('42');
  });

  it('answers an unknown tool with InvalidAction naming it', () => {
    const result = executor().call(callOf('calculater.add', { a: 1 })).content as ActionReturn;
    expect(result.type).toBe('InvalidAction');
    expect(result.valid).toBe(ActionValidCode.INVALID);
    expect(result.state).toBe(ActionStatusCode.API_ERROR);
    expect(result.errmsg).toBe('There is no tool named "calculater.add". Available tools: Calculator, echo.');
  });

  it('answers bad arguments with ARGS_ERROR naming the field', () => {
    const ex = executor();
    expect(ex.forward('Calculator.add', { a: 1 }).errmsg).toContain('missing required argument "b"');
    expect(ex.forward('Calculator.add', { a: 1, b: 'x' }).errmsg).toContain('argument "b"');
    expect(ex.forward('Calculator.add', { a: 1, b: 2, c: 3 }).errmsg).toContain('unknown argument "c"');
    expect(ex.forward('Calculator.add', '{"a": 1,').state).toBe(ActionStatusCode.ARGS_ERROR);
  });

  it('answers a thrown error with API_ERROR and its message', () => {
    const result = executor().forward('Calculator.div', { a: 1, b: 0 });
    expect(result).toMatchObject({ state: ActionStatusCode.API_ERROR, errmsg: 'division by zero' });
  });

  it('answers an unknown API with API_ERROR', () => {
    const result = executor().forward('Calculator.mul', { a: 1, b: 2 });
    expect(result.state).toBe(ActionStatusCode.API_ERROR);
    expect(result.errmsg).toMatch(/^invalid API/);
  });

  it('answers a message without a tool call with InvalidAction, never a throw', () => {
    const result = resultOf(executor().call(new AgentMessage({ sender: 'Agent', content: 'just text' })));
    expect(result.valid).toBe(ActionValidCode.INVALID);
    expect(result.errmsg).toContain('expects a tool call');
  });

  it('runs NoAction and FinishAction by name', () => {
    const ex = executor();
    expect(ex.forward('NoAction', 'Follow the format!')).toMatchObject({
      errmsg: 'Follow the format!',
      valid: ActionValidCode.INVALID,
    });
    expect(ex.forward('NoAction', {}).errmsg).toBe('Please follow the format');
    expect(ex.forward('FinishAction', { response: '42' })).toMatchObject({
      valid: ActionValidCode.FINISH,
      state: ActionStatusCode.SUCCESS,
    });
    expect(ex.forward('FinishAction', 'the answer').formatResult()).toBe('the answer');
  });

  it('lists finishAction among the tools with finishInAction, keeping valid FINISH', () => {
    const ex = new ActionExecutor({ actions: [echo], finishInAction: true });
    expect(ex.keys()).toEqual(['echo', 'FinishAction']);
    expect(ex.forward('FinishAction', { response: 'x' }).valid).toBe(ActionValidCode.FINISH);
  });

  it('uses custom builtins', () => {
    const ex = new ActionExecutor({
      actions: [echo],
      invalidAction: new InvalidAction({ errMsg: 'nope' }),
      noAction: new NoAction({ name: 'Skip' }),
    });
    expect(ex.forward('Skip', {}).type).toBe('Skip');
    expect(ex.noAction.name).toBe('Skip');
    expect(new FinishAction().name).toBe('FinishAction');
  });

  it('manages its tools: has, keys, get, set, delete, description', () => {
    const actions = [calculator];
    const ex = new ActionExecutor({ actions });
    expect(actions).toHaveLength(1);
    expect(ex.has('Calculator')).toBe(true);
    expect(ex.has('echo')).toBe(false);
    ex.set(echo);
    expect(ex.keys()).toEqual(['Calculator', 'echo']);
    expect(ex.get('echo')).toBe(echo);
    const description = ex.description();
    expect(description.map((api) => api.name)).toEqual(['Calculator.add', 'Calculator.div', 'echo']);
    description[0]!.name = 'changed';
    expect(ex.description()[0]!.name).toBe('Calculator.add');
    expect(calculator.description.api_list?.[0]?.name).toBe('add');
    expect(ex.delete('echo')).toBe(true);
    expect(ex.delete('echo')).toBe(false);
    expect(ex.toOpenAITools().map((t) => t.function.name)).toEqual(['Calculator__add', 'Calculator__div']);
  });

  it('refuses async tools and duplicate names', () => {
    const slow = asyncTool({ name: 'slow', run: async () => 1 });
    expect(() => new ActionExecutor({ actions: [slow as never] })).toThrow(/AsyncActionExecutor/);
    expect(() => new ActionExecutor({ actions: [echo, echo] })).toThrow(ConfigurationError);
  });

  it('never lets a tool error escape', () => {
    const evil = tool({
      name: 'evil',
      run: () => {
        throw Object.assign(new Error(''), { name: 'WeirdError' });
      },
    });
    const ex = new ActionExecutor({ actions: [evil] });
    expect(() => ex.call(callOf('evil', {}))).not.toThrow();
    expect(ex.forward('evil', {}).errmsg).toBe('the tool evil threw a WeirdError without a message');
    expect(ex.forward(undefined as never, {}).valid).toBe(ActionValidCode.INVALID);
  });
});

describe('ActionExecutor hooks', () => {
  class CodeProcessor extends Hook {
    seen: SessionId[] = [];
    override beforeAction(_executor: HookExecutor, message: AgentMessage, sessionId: SessionId) {
      this.seen.push(sessionId);
      const copy = message.clone();
      copy.content = { name: 'echo', parameters: { text: (message.formatted as ToolResponse).action } };
      return copy;
    }
    override afterAction(_executor: HookExecutor, message: AgentMessage) {
      const result = message.content;
      message.content =
        result instanceof ActionReturn
          ? result.state === ActionStatusCode.SUCCESS
            ? result.formatResult()
            : result.errmsg
          : result;
      return message;
    }
  }

  it('converts messages before and after, without touching the caller’s message', () => {
    const hook = new CodeProcessor();
    const ex = new ActionExecutor({ actions: [echo], hooks: [hook] });
    const message = new AgentMessage({ sender: 'Agent', content: 'raw', formatted: { action: 'print(1)' } });
    const reply = ex.call(message, { sessionId: 'alice' });
    expect(reply.content).toBe('print(1)');
    expect(reply.sender).toBe('ActionExecutor');
    expect(message.content).toBe('raw');
    expect(hook.seen).toEqual(['alice']);
  });

  it('registerHook adds a hook; remove() takes it out', () => {
    const ex = new ActionExecutor({ actions: [echo] });
    const handle = ex.registerHook(new CodeProcessor());
    const message = new AgentMessage({ sender: 'Agent', content: null, formatted: { action: 'x' } });
    expect(ex.call(message).content).toBe('x');
    handle.remove();
    expect(ex.hooks).toHaveLength(0);
    expect(ex.call(message).content).toBeInstanceOf(ActionReturn);
  });

  it('reports a failing or async hook as a HookError', () => {
    class Failing extends Hook {
      override beforeAction(): never {
        throw new Error('boom');
      }
    }
    class Async extends Hook {
      override async afterAction() {
        return undefined;
      }
    }
    const failing = new ActionExecutor({ actions: [echo], hooks: [new Failing()] });
    expect(() => failing.call(callOf('echo', { text: 'x' }))).toThrow(HookError);
    // @ts-expect-error an async hook in a sync executor is a compile error; this checks the runtime guard
    const asyncHook = new ActionExecutor({ actions: [echo], hooks: [new Async()] });
    expect(() => asyncHook.call(callOf('echo', { text: 'x' }))).toThrow(/returned a Promise/);
  });
});
