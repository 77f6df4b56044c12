import {
  Agent,
  type AgentMessage,
  AsyncAgent,
  AsyncBaseLLM,
  AsyncFunctionCallingAgent,
  AsyncStreamingAgent,
  asyncTool,
  ConfigurationError,
  FunctionCallingAgent,
  GuardrailTripped,
  guardrail,
  tool,
} from 'lagent-ts';
import { AsyncMockLLM, MockLLM } from 'lagent-ts/testing';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';

async function tripped(promise: Promise<unknown>): Promise<GuardrailTripped> {
  try {
    await promise;
  } catch (error) {
    expect(error).toBeInstanceOf(GuardrailTripped);
    return error as GuardrailTripped;
  }
  throw new Error('expected GuardrailTripped');
}

const noPasswords = (on: 'input' | 'output', parallel?: boolean) =>
  guardrail({
    name: 'no-passwords',
    on,
    parallel,
    check: (message: AgentMessage) =>
      String(message.content).includes('password') ? 'mentions a password' : undefined,
  });

describe('guardrails', () => {
  it('input: a tripped check fails the call before the model is asked; the session keeps nothing', () => {
    const llm = new MockLLM({ responses: ['hello'] });
    const agent = new Agent({ llm, hooks: [noPasswords('input')] });
    let error: unknown;
    try {
      agent.call('my password is hunter2', { sessionId: 1 });
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(GuardrailTripped);
    expect((error as GuardrailTripped).guardrail).toBe('no-passwords');
    expect((error as GuardrailTripped).reason).toBe('mentions a password');
    expect(llm.calls).toHaveLength(0);
    expect(agent.memory!.get(1)?.length ?? 0).toBe(0);
    expect(agent.call('hi', { sessionId: 1 }).content).toBe('hello');
  });

  it('output: a reply that trips is not returned and not kept', async () => {
    const llm = new AsyncMockLLM({ responses: ['the password is swordfish', 'fine'] });
    const agent = new AsyncAgent({ llm, hooks: [noPasswords('output')] });
    const error = await tripped(agent.call('tell me', { sessionId: 's' }));
    expect(error.message).toMatch(/guardrail no-passwords tripped on the output: mentions a password/);
    expect(agent.memory!.get('s')?.length ?? 0).toBe(0);
    expect((await agent.call('again', { sessionId: 's' })).content).toBe('fine');
  });

  it('parallel input: the model starts at once; a trip aborts it while it is answering', async () => {
    // A model that answers only when its request is aborted (then it rejects with the reason).
    const asked: AbortSignal[] = [];
    const llm = new (class extends AsyncBaseLLM {
      async chat(_messages: unknown, params?: { signal?: AbortSignal }): Promise<string> {
        const signal = params!.signal!;
        asked.push(signal);
        return new Promise<string>((_resolve, reject) =>
          signal.addEventListener('abort', () => reject(signal.reason), { once: true }),
        );
      }
    })();
    let release: () => void = () => {};
    const checked = new Promise<void>((resolve) => {
      release = resolve;
    });
    const slowCheck = guardrail({
      name: 'slow-moderation',
      on: 'input',
      parallel: true,
      check: async (message) => {
        await checked;
        return String(message.content).includes('forbidden') ? 'forbidden topic' : undefined;
      },
    });
    const agent = new AsyncAgent({ llm, hooks: [slowCheck] });
    const call = agent.call('a forbidden question', { sessionId: 1 });
    while (asked.length === 0) await new Promise((resolve) => setImmediate(resolve));
    // The model was asked before the check answered.
    expect(asked[0]!.aborted).toBe(false);
    release();
    const error = await tripped(call);
    expect(error.reason).toBe('forbidden topic');
    expect(asked[0]!.aborted).toBe(true); // the request was aborted, not waited out
    expect(agent.memory!.get(1)?.length ?? 0).toBe(0);
  });

  it('parallel input: a model that answers first still waits for the check', async () => {
    const llm = new AsyncMockLLM({ responses: ['quick'] });
    const agent = new AsyncAgent({
      llm,
      hooks: [
        guardrail({
          name: 'late',
          on: 'input',
          parallel: true,
          check: () => new Promise((resolve) => setTimeout(() => resolve('too late'), 50)),
        }),
      ],
    });
    await tripped(agent.call('hi', { sessionId: 1 }));
    expect(agent.memory!.get(1)?.length ?? 0).toBe(0);
    const passing = new AsyncAgent({
      llm: new AsyncMockLLM({ responses: ['quick'] }),
      hooks: [guardrail({ name: 'ok', on: 'input', parallel: true, check: async () => undefined })],
    });
    expect((await passing.call('hi')).content).toBe('quick');
  });

  it('output of a stream: each chunk is checked; a trip stops the stream and the model', async () => {
    const text = 'one two three password four five six seven eight nine ten';
    const llm = new AsyncMockLLM({ responses: [text], chunkSize: 4 });
    const agent = new AsyncStreamingAgent({ llm, hooks: [noPasswords('output')] });
    const seen: string[] = [];
    await tripped(
      (async () => {
        for await (const chunk of agent.call('go', { sessionId: 1 })) seen.push(String(chunk.content));
      })(),
    );
    expect(seen.length).toBeGreaterThan(2);
    expect(seen.every((content) => !content.includes('password'))).toBe(true);
    expect(seen.at(-1)!.length).toBeLessThan(text.length);
    expect(agent.memory!.get(1)?.length ?? 0).toBe(0);
  });

  it('tool: checked before every tool call inside the call, sub-agents included; a trip fails the whole call', async () => {
    const runs: string[] = [];
    const remove = asyncTool({
      name: 'Remove',
      parameters: z.object({ path: z.string() }),
      run: async ({ path }) => {
        runs.push(path);
        return 'removed';
      },
    });
    const llm = new AsyncMockLLM({
      responses: [
        { content: '', toolCalls: [{ name: 'Remove', arguments: { path: '/tmp/x' } }] },
        { content: '', toolCalls: [{ name: 'Remove', arguments: { path: '/etc/passwd' } }] },
        'done',
      ],
    });
    const inner = new AsyncFunctionCallingAgent({ llm, actions: [remove], name: 'inner' });
    const seen: unknown[] = [];
    class Outer extends AsyncAgent {
      worker = inner;
      override forward(messages: AgentMessage[], options: { sessionId: string | number }) {
        return this.worker.call(messages, { sessionId: options.sessionId });
      }
    }
    const outer = new Outer({
      hooks: [
        guardrail({
          name: 'no-system-files',
          on: 'tool',
          check: (message, context) => {
            seen.push(context.toolCall);
            return String((message.formatted as { arguments: { path: string } }).arguments.path).startsWith(
              '/etc',
            )
              ? 'touches a system file'
              : undefined;
          },
        }),
      ],
    });
    const error = await tripped(outer.call('clean', { sessionId: 1 }));
    expect(error.reason).toBe('touches a system file');
    expect(runs).toEqual(['/tmp/x']);
    expect(seen).toEqual([
      { name: 'Remove', arguments: { path: '/tmp/x' } },
      { name: 'Remove', arguments: { path: '/etc/passwd' } },
    ]);
    expect(inner.memory!.get(1)?.length ?? 0).toBe(0);
  });

  it('sync agents take synchronous tool checks; a throwing check trips (fails closed)', () => {
    const agent = new FunctionCallingAgent({
      llm: new MockLLM({
        responses: [{ content: '', toolCalls: [{ name: 'Echo', arguments: { s: 'x' } }] }, 'ok'],
      }),
      actions: [tool({ name: 'Echo', parameters: z.object({ s: z.string() }), run: ({ s }) => s })],
      hooks: [
        guardrail({
          name: 'broken',
          on: 'tool',
          check: () => {
            throw new Error('moderation service down');
          },
        }),
      ],
    });
    expect(() => agent.call('go')).toThrow(
      /guardrail broken tripped on the tool: its check failed: moderation service down/,
    );
  });

  it('bad options are configuration errors', () => {
    expect(() => guardrail({ name: '', on: 'input', check: () => undefined })).toThrow(ConfigurationError);
    expect(() => guardrail({ name: 'x', on: 'everything' as never, check: () => undefined })).toThrow(
      /on must be/,
    );
    expect(() => guardrail({ name: 'x', on: 'output', parallel: true, check: () => undefined })).toThrow(
      /parallel applies to input/,
    );
  });
});
