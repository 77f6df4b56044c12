import {
  type ActionReturn,
  ActionStatusCode,
  AgentMessage,
  AsyncActionExecutor,
  asyncTool,
  asyncToolkit,
  Hook,
  HookError,
  type HookExecutor,
  type SessionId,
  tool,
} from 'lagent-ts';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { Held } from '../helpers/held';
import { echo, resultOf } from '../helpers/tools';

const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener('abort', () => {
      clearTimeout(timer);
      reject(signal.reason);
    });
  });

const callOf = (name: string, parameters: unknown) =>
  new AgentMessage({ sender: 'Agent', content: { name, parameters } });

describe('AsyncActionExecutor', () => {
  it('awaits async tools and runs sync ones', async () => {
    const slowEcho = asyncTool({
      name: 'slowEcho',
      parameters: z.object({ text: z.string() }),
      run: async ({ text }) => {
        await sleep(1);
        return text;
      },
    });
    const upper = tool({
      name: 'upper',
      parameters: z.object({ text: z.string() }),
      run: ({ text }) => text.toUpperCase(),
    });
    const executor = new AsyncActionExecutor({ actions: [slowEcho, upper] });
    expect(resultOf(await executor.call(callOf('slowEcho', { text: '数学 🚀' }))).formatResult()).toBe(
      '数学 🚀',
    );
    expect((await executor.forward('upper', '{"text": "a"}')).formatResult()).toBe('A');
    expect((await executor.forward('nothing', {})).errmsg).toContain('There is no tool named "nothing"');
  });

  it('runs toolkits and maps rejections to API_ERROR', async () => {
    const web = asyncToolkit({
      name: 'Web',
      apis: {
        search: { parameters: z.object({ q: z.string() }), run: async ({ q }) => [`result for ${q}`] },
        open: {
          parameters: z.object({ url: z.string() }),
          run: async () => {
            throw new Error('404 not found');
          },
        },
      },
    });
    const executor = new AsyncActionExecutor({ actions: [web] });
    expect((await executor.forward('Web.search', { q: 'x' })).formatResult()).toBe('["result for x"]');
    expect(await executor.forward('Web.open', { url: 'u' })).toMatchObject({
      state: ActionStatusCode.API_ERROR,
      errmsg: '404 not found',
    });
    expect((await executor.forward('Web.open', {})).state).toBe(ActionStatusCode.ARGS_ERROR);
    expect((await executor.forward('Web.close', {})).errmsg).toMatch(/^invalid API/);
  });

  it('runs 100 calls across sessions concurrently: all 100 are running before any answers', async () => {
    const sessions: SessionId[] = [];
    const held = new Held();
    const slow = asyncTool({
      name: 'slow',
      parameters: z.object({ n: z.number() }),
      run: async ({ n }, { sessionId }) => {
        sessions.push(sessionId);
        return held.wait(n * 2);
      },
    });
    const executor = new AsyncActionExecutor({ actions: [slow] });
    const replies = Promise.all(
      Array.from({ length: 100 }, (_, i) => executor.call(callOf('slow', { n: i }), { sessionId: i })),
    );
    // One after another, the second would start only once the first answered.
    await held.until(100);
    held.release();
    expect((await replies).map((reply) => resultOf(reply).formatResult())).toEqual(
      Array.from({ length: 100 }, (_, i) => String(i * 2)),
    );
    expect(new Set(sessions).size).toBe(100);
  });

  it('times out a slow tool per call with an API_ERROR and aborts its signal', async () => {
    let toolSignal: AbortSignal | undefined;
    const hang = asyncTool({
      name: 'hang',
      run: async (_args, { signal }) => {
        toolSignal = signal;
        // Answers only when its signal aborts: the call ends by its timeout or not at all.
        await new Held().wait(undefined, signal);
        return 'never';
      },
    });
    const executor = new AsyncActionExecutor({ actions: [hang] });
    const reply = await executor.call(callOf('hang', {}), { timeoutMs: 30 });
    expect(reply.content).toMatchObject({
      state: ActionStatusCode.API_ERROR,
      errmsg: 'hang timed out after 30 ms',
    });
    expect(toolSignal?.aborted).toBe(true);
  });

  it('applies the executor-wide timeout unless a call sets its own', async () => {
    const wait = asyncTool({
      name: 'wait',
      parameters: z.object({ ms: z.number() }),
      run: async ({ ms }) => sleep(ms).then(() => 'done'),
    });
    const executor = new AsyncActionExecutor({ actions: [wait], timeoutMs: 20 });
    expect((await executor.forward('wait', { ms: 200 })).errmsg).toBe('wait timed out after 20 ms');
    expect((await executor.forward('wait', { ms: 40 }, { timeoutMs: 1000 })).formatResult()).toBe('done');
    expect(() => new AsyncActionExecutor({ actions: [wait], timeoutMs: -1 })).toThrow(/timeoutMs/);
  });

  it('rejects with the abort reason when the caller aborts, and passes the signal to the tool', async () => {
    let toolSawAbort = false;
    let toolStarted = false;
    const hang = asyncTool({
      name: 'hang',
      run: async (_args, { signal }) => {
        signal?.addEventListener('abort', () => {
          toolSawAbort = true;
        });
        toolStarted = true;
        await new Held().wait(undefined, signal);
      },
    });
    const executor = new AsyncActionExecutor({ actions: [hang] });
    const controller = new AbortController();
    const pending = executor.call(callOf('hang', {}), { signal: controller.signal });
    await expect.poll(() => toolStarted).toBe(true);
    controller.abort(new Error('stop'));
    await expect(pending).rejects.toThrow('stop');
    expect(toolSawAbort).toBe(true);
    await expect(
      executor.call(callOf('hang', {}), { signal: AbortSignal.abort(new Error('early')) }),
    ).rejects.toThrow('early');
  });

  it('awaits async hooks and converts messages', async () => {
    class AsyncProcessor extends Hook {
      override async beforeAction(_executor: HookExecutor, message: AgentMessage) {
        await sleep(1);
        return new AgentMessage({
          sender: message.sender,
          content: { name: 'echo', parameters: { text: message.content } },
        });
      }
      override async afterAction(_executor: HookExecutor, message: AgentMessage) {
        const result = message.content as ActionReturn;
        return new AgentMessage({ sender: message.sender, content: `result: ${result.formatResult()}` });
      }
    }
    const executor = new AsyncActionExecutor({ actions: [echo], hooks: [new AsyncProcessor()] });
    const reply = await executor.call(new AgentMessage({ sender: 'Agent', content: 'hi' }));
    expect(reply.content).toBe('result: hi');
  });

  it('rejects with a HookError when a hook fails', async () => {
    class Failing extends Hook {
      override async afterAction(): Promise<AgentMessage> {
        throw new Error('bad hook');
      }
    }
    const executor = new AsyncActionExecutor({ actions: [echo], hooks: [new Failing()] });
    await expect(executor.call(callOf('echo', { text: 'x' }))).rejects.toBeInstanceOf(HookError);
  });
});
