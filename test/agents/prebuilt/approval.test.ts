import {
  ActionExecutor,
  type AgentMessage,
  AsyncAgent,
  AsyncFunctionCallingAgent,
  AsyncStreamingFunctionCallingAgent,
  asyncTool,
  FunctionCallingAgent,
  interruptsOf,
  resumeWith,
  StreamingFunctionCallingAgent,
  tool,
} from 'lagent-ts';
import { AsyncMockLLM, MockLLM } from 'lagent-ts/testing';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';

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

function scripted() {
  return new MockLLM({
    responses: [
      {
        toolCalls: [
          { name: 'Delete', arguments: { path: '/tmp/a' } },
          { name: 'Lookup', arguments: { q: 'x' } },
        ],
      },
      'Done.',
      'Something else.',
    ],
  });
}

describe('tool approval in the function-calling loop', () => {
  it('stops before a call that needs approval: nothing of the round runs, the interrupt names the call', () => {
    const runs: string[] = [];
    const llm = scripted();
    const agent = new FunctionCallingAgent({ llm, actions: [deleteTool(runs), lookup] });
    const reply = agent.call('Clean up', { sessionId: 's' });
    expect(reply.type).toBe('interrupt');
    const interrupts = interruptsOf(reply);
    expect(interrupts).toEqual([
      {
        id: 'call_1',
        kind: 'approval',
        path: '',
        toolCall: { id: 'call_1', name: 'Delete', arguments: { path: '/tmp/a' } },
      },
    ]);
    expect(runs).toEqual([]);
    expect(llm.calls).toHaveLength(1);
    // Nothing was rolled back: the user's message and the model's calls are in memory, no reply.
    expect(
      agent
        .memory!.get('s')!
        .getMemory()
        .map((m) => m.content),
    ).toEqual(['Clean up']);
    expect(agent.agent.memory!.get('s')!.length).toBe(2);
  });

  it('approved: the round runs and the loop finishes; the model sees both results', () => {
    const runs: string[] = [];
    const llm = scripted();
    const agent = new FunctionCallingAgent({ llm, actions: [deleteTool(runs), lookup] });
    const [ask] = interruptsOf(agent.call('Clean up', { sessionId: 1 }));
    const reply = agent.call(resumeWith([{ id: ask!.id, approve: true }]), { sessionId: 1 });
    expect(reply.content).toBe('Done.');
    expect(runs).toEqual(['/tmp/a']);
    const tools = llm.calls[1]!.messages.filter((m) => m.role === 'tool').map((m) => m.content);
    expect(tools).toEqual(['deleted /tmp/a', 'found x']);
    // The resume message is not part of the conversation.
    expect(
      agent
        .memory!.get(1)!
        .getMemory()
        .map((m) => m.content),
    ).toEqual(['Clean up', 'Done.']);
  });

  it('approved with edited arguments: the tool runs with them', () => {
    const runs: string[] = [];
    const agent = new FunctionCallingAgent({ llm: scripted(), actions: [deleteTool(runs), lookup] });
    const [ask] = interruptsOf(agent.call('Clean up'));
    agent.call(resumeWith([{ id: ask!.id, approve: true, arguments: { path: '/tmp/b' } }]));
    expect(runs).toEqual(['/tmp/b']);
  });

  it('declined: the tool does not run, the model reads the reason', () => {
    const runs: string[] = [];
    const llm = scripted();
    const agent = new FunctionCallingAgent({ llm, actions: [deleteTool(runs), lookup] });
    const [ask] = interruptsOf(agent.call('Clean up'));
    const reply = agent.call(resumeWith([{ id: ask!.id, approve: false, reason: 'keep it' }]));
    expect(reply.content).toBe('Done.');
    expect(runs).toEqual([]);
    const tools = llm.calls[1]!.messages.filter((m) => m.role === 'tool').map((m) => m.content);
    expect(tools[0]).toContain('declined');
    expect(tools[0]).toContain('keep it');
    expect(tools[1]).toBe('found x');
  });

  it('a new message instead of a decision declines the waiting calls and goes on', () => {
    const runs: string[] = [];
    const llm = scripted();
    const agent = new FunctionCallingAgent({ llm, actions: [deleteTool(runs), lookup] });
    agent.call('Clean up');
    const reply = agent.call('Never mind, what time is it?');
    expect(reply.content).toBe('Done.');
    expect(runs).toEqual([]);
    const seen = llm.calls[1]!.messages;
    expect(seen.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'tool', 'user']);
    expect(seen[2]!.content).toContain('the user sent a new message');
    expect(seen[4]!.content).toBe('Never mind, what time is it?');
  });

  it('a decision only for some: the others still wait', () => {
    const runs: string[] = [];
    const llm = new MockLLM({
      responses: [
        {
          toolCalls: [
            { name: 'Delete', arguments: { path: '/1' } },
            { name: 'Delete', arguments: { path: '/2' } },
          ],
        },
        'Done.',
      ],
    });
    const agent = new FunctionCallingAgent({ llm, actions: [deleteTool(runs)] });
    const asks = interruptsOf(agent.call('Clean up'));
    expect(asks.map((a) => a.id)).toEqual(['call_1', 'call_2']);
    const again = agent.call(resumeWith([{ id: 'call_1', approve: true }]));
    expect(interruptsOf(again).map((a) => a.id)).toEqual(['call_2']);
    expect(runs).toEqual([]);
    expect(
      agent.call(
        resumeWith([
          { id: 'call_1', approve: true },
          { id: 'call_2', approve: true },
        ]),
      ).content,
    ).toBe('Done.');
    expect(runs).toEqual(['/1', '/2']);
  });

  it('a function decides per call from the checked arguments', () => {
    const runs: string[] = [];
    const llm = new MockLLM({
      responses: [{ toolCalls: [{ name: 'Delete', arguments: { path: '/tmp/x' } }] }, 'ok'],
    });
    const agent = new FunctionCallingAgent({
      llm,
      actions: [deleteTool(runs, ({ path }) => !path.startsWith('/tmp/'))],
    });
    expect(agent.call('go').content).toBe('ok');
    expect(runs).toEqual(['/tmp/x']);
  });

  it("an executor's needsApproval covers tools the user does not own", () => {
    const executor = new ActionExecutor({
      actions: [lookup],
      needsApproval: (call) => call.name === 'Lookup',
    });
    expect(
      executor.approvalNeeded({ id: '1', name: 'Lookup', arguments: { q: 'a' } }, { sessionId: 0 }),
    ).toBe(true);
    expect(executor.approvalNeeded({ id: '1', name: 'Other', arguments: {} }, { sessionId: 0 })).toBe(false);
  });

  it('a resume message on a session with nothing waiting is a clear error', () => {
    const agent = new FunctionCallingAgent({ llm: scripted(), actions: [lookup] });
    expect(() => agent.call(resumeWith([{ id: 'x', approve: true }]))).toThrow(
      /no call waiting for a decision/,
    );
  });

  it('a paused session survives stateDict / loadStateDict (both shapes) into a fresh agent', () => {
    for (const format of ['lagent-ts', 'lagent'] as const) {
      const runs: string[] = [];
      const first = new FunctionCallingAgent({ llm: scripted(), actions: [deleteTool(runs), lookup] });
      const [ask] = interruptsOf(first.call('Clean up'));
      const saved = JSON.parse(JSON.stringify(first.stateDict(0, { format })));
      const llm = new MockLLM({ responses: ['Done.'] });
      const fresh = new FunctionCallingAgent({ llm, actions: [deleteTool(runs), lookup] });
      fresh.loadStateDict(saved);
      expect(fresh.call(resumeWith([{ id: ask!.id, approve: true }])).content).toBe('Done.');
      expect(runs).toEqual(['/tmp/a']);
      expect(llm.calls).toHaveLength(1);
    }
  });

  it('async: an async needsApproval, the interrupt, the resume', async () => {
    const runs: string[] = [];
    const remove = asyncTool({
      name: 'Delete',
      parameters: z.object({ path: z.string() }),
      needsApproval: async ({ path }) => path !== '/safe',
      run: async ({ path }) => {
        runs.push(path);
        return 'ok';
      },
    });
    const llm = new AsyncMockLLM({
      responses: [{ toolCalls: [{ name: 'Delete', arguments: { path: '/x' } }] }, 'Done.'],
    });
    const agent = new AsyncFunctionCallingAgent({ llm, actions: [remove] });
    const events: string[] = [];
    agent.events.on('interrupt', (e) => events.push(`interrupt ${e.interrupts.map((i) => i.id).join()}`));
    agent.events.on('resume', (e) => events.push(`resume ${e.decisions.map((d) => d.id).join()}`));
    const reply = await agent.call('go', { sessionId: 's' });
    const [ask] = interruptsOf(reply);
    expect(runs).toEqual([]);
    const done = await agent.call(resumeWith([{ id: ask!.id, approve: true }]), { sessionId: 's' });
    expect(done.content).toBe('Done.');
    expect(runs).toEqual(['/x']);
    expect(events).toEqual(['interrupt call_1', 'resume call_1']);
  });

  it('streaming: the interrupt is the final reply of the stream; the resume streams the rest', async () => {
    const runs: string[] = [];
    const llm = new AsyncMockLLM({
      responses: [{ toolCalls: [{ name: 'Delete', arguments: { path: '/x' } }] }, 'Done.'],
    });
    const remove = asyncTool({
      name: 'Delete',
      parameters: z.object({ path: z.string() }),
      needsApproval: true,
      run: ({ path }) => {
        runs.push(path);
        return 'ok';
      },
    });
    const agent = new AsyncStreamingFunctionCallingAgent({ llm, actions: [remove] });
    let last: AgentMessage | undefined;
    for await (const chunk of agent.call('go')) last = chunk;
    const asks = interruptsOf(last);
    expect(asks).toHaveLength(1);
    const chunks: AgentMessage[] = [];
    for await (const chunk of agent.call(resumeWith([{ id: asks[0]!.id, approve: true }])))
      chunks.push(chunk);
    expect(chunks.at(-1)!.content).toBe('Done.');
    expect(runs).toEqual(['/x']);
  });

  it('sync streaming variant pauses too', () => {
    const runs: string[] = [];
    const agent = new StreamingFunctionCallingAgent({ llm: scripted(), actions: [deleteTool(runs), lookup] });
    const chunks = [...agent.call('Clean up')];
    expect(interruptsOf(chunks.at(-1))).toHaveLength(1);
    const after = [...agent.call(resumeWith([{ id: 'call_1', approve: true }]))];
    expect(after.at(-1)!.content).toBe('Done.');
    expect(runs).toEqual(['/tmp/a']);
  });

  it('a nested function-calling agent: the interrupt says where, and the resume reaches it', async () => {
    const runs: string[] = [];
    const remove = asyncTool({
      name: 'Delete',
      parameters: z.object({ path: z.string() }),
      needsApproval: true,
      run: ({ path }) => {
        runs.push(path);
        return 'ok';
      },
    });
    class Outer extends AsyncAgent {
      worker = new AsyncFunctionCallingAgent({
        llm: new AsyncMockLLM({
          responses: [{ toolCalls: [{ name: 'Delete', arguments: { path: '/x' } }] }, 'worker done'],
        }),
        actions: [remove],
      });
      override async forward(messages: AgentMessage[]) {
        const inner = await this.worker.call(messages.length ? messages : [], { sessionId: 0 });
        return `outer: ${inner.content}`;
      }
    }
    const outer = new Outer();
    const reply = await outer.call('go');
    const [ask] = interruptsOf(reply);
    expect(ask).toMatchObject({ id: 'worker:call_1', path: 'worker' });
    const done = await outer.call(resumeWith([{ id: ask!.id, approve: true }]));
    expect(done.content).toBe('outer: worker done');
    expect(runs).toEqual(['/x']);
  });
});
