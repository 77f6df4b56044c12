import {
  AgentForInternLM,
  type AgentMessage,
  AsyncActionExecutor,
  AsyncAgent,
  AsyncFunctionCallingAgent,
  AsyncReAct,
  asyncTool,
  type ForwardOptions,
  FunctionCallingAgent,
  interruptsOf,
  MemoryStore,
  pendingInterrupts,
  ReAct,
  resumeWith,
  tool,
} from 'lagent-ts';
import { AsyncMockLLM, MockLLM } from 'lagent-ts/testing';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { pluginCall } from '../helpers/internlm-replies';

/*
 * pendingInterrupts: what a paused session waits for, read back from its memories (the prebuilt loops) and the
 * durable journal (any forward), with the ids the interrupt reply gave, so a page or a terminal that lost the
 * reply can still approve or decline.
 */

function deleteTool(runs: string[], needsApproval: boolean | ((args: { path: string }) => boolean) = true) {
  return tool({
    name: 'Delete',
    description: 'Deletes a file',
    parameters: z.object({ path: z.string() }),
    needsApproval,
    run: ({ path }) => {
      runs.push(path);
      return `deleted ${path}`;
    },
  });
}

const lookup = tool({
  name: 'Lookup',
  parameters: z.object({ q: z.string() }),
  run: ({ q }) => `found ${q}`,
});

const twoDeletesAndALookup = {
  toolCalls: [
    { name: 'Delete', arguments: { path: '/tmp/keep' } },
    { name: 'Delete', arguments: { path: '/tmp/old' } },
    { name: 'Lookup', arguments: { q: 'x' } },
  ],
};

describe('pendingInterrupts', () => {
  it('lists what a function-calling session waits for, as the interrupt reply named it; nothing once answered', () => {
    const runs: string[] = [];
    const llm = new MockLLM({ responses: [twoDeletesAndALookup, 'Done.'] });
    const agent = new FunctionCallingAgent({ llm, actions: [deleteTool(runs), lookup] });
    expect(agent.pendingInterrupts('s')).toEqual([]);
    const reply = agent.call('Clean up', { sessionId: 's' });
    // The Lookup needs no approval: only the two Deletes wait.
    expect(interruptsOf(reply)).toHaveLength(2);
    expect(agent.pendingInterrupts('s')).toEqual(interruptsOf(reply));
    expect(pendingInterrupts(agent, 's')).toEqual(interruptsOf(reply));
    // Another session waits for nothing.
    expect(agent.pendingInterrupts('t')).toEqual([]);

    const [first, second] = agent.pendingInterrupts('s') as ReturnType<typeof interruptsOf>;
    agent.call(
      resumeWith([
        { id: first!.id, approve: false, reason: 'keep it' },
        { id: second!.id, approve: true },
      ]),
      {
        sessionId: 's',
      },
    );
    expect(runs).toEqual(['/tmp/old']);
    expect(agent.pendingInterrupts('s')).toEqual([]);
  });

  it("asks the tool's needsApproval for each call, as the loop does (async: a promise)", async () => {
    const runs: string[] = [];
    const llm = new AsyncMockLLM({ responses: [twoDeletesAndALookup, 'Done.'] });
    const gated = asyncTool({
      name: 'Delete',
      parameters: z.object({ path: z.string() }),
      needsApproval: async ({ path }) => path !== '/tmp/keep',
      run: async ({ path }) => {
        runs.push(path);
        return `deleted ${path}`;
      },
    });
    const agent = new AsyncFunctionCallingAgent({ llm, actions: [gated, lookup] });
    const reply = await agent.call('Clean up', { sessionId: 's' });
    const pending = agent.pendingInterrupts('s');
    expect(pending).toBeInstanceOf(Promise);
    expect(await pending).toEqual(interruptsOf(reply));
    expect((await pending).map((ask) => ask.toolCall.arguments)).toEqual([{ path: '/tmp/old' }]);
  });

  it('survives stateDict into a fresh agent (a reload, another process): the same ids, and they resume', () => {
    const runs: string[] = [];
    const make = (responses: unknown[]) =>
      new FunctionCallingAgent({
        llm: new MockLLM({ responses: responses as never }),
        actions: [deleteTool(runs), lookup],
      });
    const first = make([twoDeletesAndALookup]);
    const reply = first.call('Clean up', { sessionId: 's' });
    const fresh = make(['Done.']);
    fresh.loadStateDict(first.stateDict('s'), 's');
    const pending = fresh.pendingInterrupts('s') as ReturnType<typeof interruptsOf>;
    expect(pending).toEqual(interruptsOf(reply));
    fresh.call(resumeWith(pending.map((ask) => ({ id: ask.id, approve: true }))), { sessionId: 's' });
    expect(runs).toEqual(['/tmp/keep', '/tmp/old']);
  });

  it('a loop stopped at maxTurn waits for nothing, although its last calls are still unanswered', () => {
    const llm = new MockLLM({ responses: [{ toolCalls: [{ name: 'Delete', arguments: { path: '/a' } }] }] });
    const agent = new FunctionCallingAgent({ llm, actions: [deleteTool([], false)], maxTurn: 1 });
    const reply = agent.call('Clean up', { sessionId: 's' });
    expect(reply.extraInfo).toMatchObject({ maxTurnReached: true });
    expect(agent.pendingInterrupts('s')).toEqual([]);
  });

  it('finds a sub-agent loop by its path in the tree, with the id the outermost reply gave', async () => {
    const runs: string[] = [];
    class Desk extends AsyncAgent {
      janitor = new AsyncFunctionCallingAgent({
        name: 'janitor',
        llm: new AsyncMockLLM({
          responses: [{ toolCalls: [{ name: 'Delete', arguments: { path: '/a' } }] }, 'ok'],
        }),
        actions: [deleteTool(runs)],
      });
      override async forward(messages: AgentMessage[], options: ForwardOptions) {
        return (await this.janitor.call(messages, { sessionId: options.sessionId })).content as string;
      }
    }
    const desk = new Desk({ name: 'desk' });
    const reply = await desk.call('tidy', { sessionId: 7 });
    const pending = await desk.pendingInterrupts(7);
    expect(pending).toEqual(interruptsOf(reply));
    expect(pending[0]).toMatchObject({ path: 'janitor', id: expect.stringMatching(/^janitor:/) });
  });

  it('ReAct and the InternLM agent: the text call, with its call_<n> id', async () => {
    const step = JSON.stringify({
      thought_process: 'go',
      action: { name: 'Delete', parameters: { path: '/a' } },
    });
    const react = new ReAct({
      llm: new MockLLM({ responses: [step] }),
      actions: [deleteTool([])],
      language: 'en',
    });
    const reactReply = react.call('Clean up', { sessionId: 's' });
    expect(interruptsOf(reactReply)).toHaveLength(1);
    expect(react.pendingInterrupts('s')).toEqual(interruptsOf(reactReply));

    const asyncReact = new AsyncReAct({
      llm: new AsyncMockLLM({ responses: [step] }),
      actions: [deleteTool([])],
      language: 'en',
    });
    const asyncReply = await asyncReact.call('Clean up', { sessionId: 's' });
    expect(await asyncReact.pendingInterrupts('s')).toEqual(interruptsOf(asyncReply));

    const internlm = new AgentForInternLM({
      llm: new MockLLM({ responses: [pluginCall('Delete', { path: '/tmp/a' })] }),
      plugins: [deleteTool([])],
    });
    const internlmReply = internlm.call('Clean up', { sessionId: 's' });
    expect(interruptsOf(internlmReply)).toHaveLength(1);
    expect(internlm.pendingInterrupts('s')).toEqual(interruptsOf(internlmReply));
  });

  it("a durable composite's own forward: read from the journal, by another process sharing the store too", async () => {
    const store = new MemoryStore();
    const runs: string[] = [];
    class Janitor extends AsyncAgent {
      planner = new AsyncAgent({
        name: 'planner',
        llm: new AsyncMockLLM({
          responses: [
            { content: '', toolCalls: [{ id: 'call_del', name: 'Delete', arguments: { path: '/a' } }] },
          ],
        }),
        tools: [],
      });
      executor = new AsyncActionExecutor({
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
      override async forward(messages: AgentMessage[], options: ForwardOptions) {
        const plan = await this.planner.call(messages, { sessionId: options.sessionId });
        const results = await this.executor.call(plan, { sessionId: options.sessionId });
        return `ran ${(results.content as unknown[]).length}`;
      }
    }
    const make = () => {
      const agent = new Janitor({ name: 'janitor', durable: { store } });
      return agent;
    };
    const janitor = make();
    const reply = await janitor.call('clean up', { sessionId: 's' });
    expect(interruptsOf(reply)).toHaveLength(1);
    // The planner's memory holds no loop: only the journal knows what waits.
    expect(await janitor.pendingInterrupts('s')).toEqual(interruptsOf(reply));
    const elsewhere = make();
    expect(await elsewhere.pendingInterrupts('s')).toEqual(interruptsOf(reply));
    await janitor.call(resumeWith([{ id: interruptsOf(reply)[0]!.id, approve: true }]), { sessionId: 's' });
    expect(runs).toEqual(['/a']);
    expect(await janitor.pendingInterrupts('s')).toEqual([]);
    expect(await elsewhere.pendingInterrupts('s')).toEqual([]);
  });
});
