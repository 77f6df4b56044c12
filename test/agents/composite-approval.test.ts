import {
  ActionExecutor,
  Agent,
  type AgentMessage,
  AsyncActionExecutor,
  AsyncAgent,
  asyncTool,
  type ForwardOptions,
  interruptsOf,
  MemoryStore,
  resumeWith,
  tool,
} from 'lagent-ts';
import { AsyncMockLLM, MockLLM } from 'lagent-ts/testing';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';

const callDelete = {
  content: '',
  toolCalls: [{ id: 'call_del', name: 'Delete', arguments: { path: '/a' } }],
};

/** A composite of its own: a planner agent proposes tool calls, its executor runs them, the planner sums up. */
class Janitor extends AsyncAgent {
  planner: AsyncAgent;
  executor: AsyncActionExecutor;
  constructor(llm: AsyncMockLLM, runs: string[]) {
    super({ name: 'janitor', durable: { store: new MemoryStore() } });
    this.planner = new AsyncAgent({ llm, name: 'planner', tools: [] });
    this.executor = new AsyncActionExecutor({
      actions: [
        asyncTool({
          name: 'Delete',
          parameters: z.object({ path: z.string() }),
          needsApproval: true,
          run: async ({ path }) => {
            runs.push(path);
            return `deleted ${path}`;
          },
        }),
      ],
    });
  }
  override async forward(messages: AgentMessage[], options: ForwardOptions) {
    const plan = await this.planner.call(messages, { sessionId: options.sessionId });
    const results = await this.executor.call(plan, { sessionId: options.sessionId });
    return `results: ${(results.content as { result: { content: string }[]; errmsg: string | null }[])
      .map((r) => r.errmsg ?? r.result.map((item) => item.content).join(''))
      .join('; ')}`;
  }
}

describe("tool approval in an executor called by a composite's own forward", () => {
  it('the executor pauses the call; resumed with approval, the replayed forward runs the tool once', async () => {
    const runs: string[] = [];
    const llm = new AsyncMockLLM({ responses: [callDelete] });
    const janitor = new Janitor(llm, runs);
    const paused = await janitor.call('clean up', { sessionId: 's' });
    expect(paused.type).toBe('interrupt');
    const [ask] = interruptsOf(paused);
    expect(ask).toMatchObject({
      kind: 'approval',
      path: '',
      toolCall: { name: 'Delete', arguments: { path: '/a' } },
    });
    expect(runs).toEqual([]);
    const done = await janitor.call(resumeWith([{ id: ask!.id, approve: true, arguments: { path: '/b' } }]), {
      sessionId: 's',
    });
    expect(done.content).toBe('results: deleted /b');
    expect(runs).toEqual(['/b']);
    expect(llm.calls).toHaveLength(1); // the planner's answer came from the journal
  });

  it('declined: the executor answers with the reason and runs nothing', async () => {
    const runs: string[] = [];
    const janitor = new Janitor(new AsyncMockLLM({ responses: [callDelete] }), runs);
    const [ask] = interruptsOf(await janitor.call('clean up', { sessionId: 1 }));
    const done = await janitor.call(resumeWith([{ id: ask!.id, approve: false, reason: 'keep it' }]), {
      sessionId: 1,
    });
    expect(done.content).toMatch(/The user declined this call of Delete: keep it/);
    expect(runs).toEqual([]);
  });

  it('a sync executor in a sync composite, and an executor called outside any agent runs as before', () => {
    const runs: string[] = [];
    const remove = tool({
      name: 'Delete',
      parameters: z.object({ path: z.string() }),
      needsApproval: true,
      run: ({ path }) => {
        runs.push(path);
        return 'ok';
      },
    });
    class SyncJanitor extends Agent {
      executor = new ActionExecutor({ actions: [remove] });
      planner = new Agent({ llm: new MockLLM({ responses: [callDelete] }), tools: [] });
      override forward(messages: AgentMessage[], options: ForwardOptions) {
        const plan = this.planner.call(messages, { sessionId: options.sessionId });
        return String(this.executor.call(plan).content);
      }
    }
    const reply = new SyncJanitor().call('clean');
    expect(interruptsOf(reply)[0]!.path).toBe('');
    expect(runs).toEqual([]);
    // Outside any agent call nobody could be asked: the executor runs the call.
    const executor = new ActionExecutor({ actions: [remove] });
    executor.call({ sender: 'user', content: '', formatted: { toolCalls: callDelete.toolCalls } } as never);
    expect(runs).toEqual(['/a']);
  });
});
