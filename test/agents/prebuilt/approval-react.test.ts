import {
  ActionExecutor,
  type AgentMessage,
  AsyncAgent,
  AsyncReAct,
  asyncTool,
  interruptsOf,
  MemoryStore,
  ReAct,
  resumeWith,
  tool,
} from 'lagent-ts';
import { AsyncMockLLM, MockLLM } from 'lagent-ts/testing';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { dyingStore } from '../../helpers/durable';

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

const step = (name: string, parameters: object) =>
  JSON.stringify({ thought_process: `call ${name}`, action: { name, parameters } });
const finish = (answer: string) => JSON.stringify({ thought_process: 'done', conclusion: answer });

/** The texts of the user-role messages the model saw in one request (observations are user turns). */
function userTurns(llm: MockLLM | AsyncMockLLM, request: number): string[] {
  return llm.calls[request]!.messages.filter((m) => m.role === 'user').map((m) => String(m.content));
}

describe('tool approval in ReAct', () => {
  it('stops before a call that needs approval: the interrupt names it, nothing ran, memory kept', () => {
    const runs: string[] = [];
    const llm = new MockLLM({ responses: [step('Delete', { path: '/tmp/a' }), finish('Done.')] });
    const agent = new ReAct({ llm, actions: [deleteTool(runs)], language: 'en' });
    const reply = agent.call('Clean up', { sessionId: 's' });
    expect(reply.type).toBe('interrupt');
    expect(interruptsOf(reply)).toEqual([
      {
        id: 'call_2',
        kind: 'approval',
        path: '',
        toolCall: { id: 'call_2', name: 'Delete', arguments: { path: '/tmp/a' } },
      },
    ]);
    expect(runs).toEqual([]);
    expect(llm.calls).toHaveLength(1);
    expect(agent.selectAgent.memory!.get('s')!.length).toBe(2);
  });

  it('approved: the call runs, the model reads its result as the observation, the loop finishes', () => {
    const runs: string[] = [];
    const llm = new MockLLM({ responses: [step('Delete', { path: '/tmp/a' }), finish('Done.')] });
    const agent = new ReAct({ llm, actions: [deleteTool(runs)], language: 'en' });
    const [ask] = interruptsOf(agent.call('Clean up'));
    const reply = agent.call(resumeWith([{ id: ask!.id, approve: true }]));
    expect(reply.formatted).toEqual({ thought_process: 'done', conclusion: 'Done.' });
    expect(runs).toEqual(['/tmp/a']);
    expect(userTurns(llm, 1)).toEqual(['Clean up', 'deleted /tmp/a']);
    expect(
      agent
        .memory!.get(0)!
        .getMemory()
        .map((m) => m.content),
    ).toEqual(['Clean up', finish('Done.')]);
  });

  it('approved with edited arguments (an object, or JSON text): the tool runs with them', () => {
    for (const edited of [{ path: '/tmp/b' }, '{"path": "/tmp/b"}']) {
      const runs: string[] = [];
      const llm = new MockLLM({ responses: [step('Delete', { path: '/tmp/a' }), finish('Done.')] });
      const agent = new ReAct({ llm, actions: [deleteTool(runs)], language: 'en' });
      const [ask] = interruptsOf(agent.call('Clean up'));
      agent.call(resumeWith([{ id: ask!.id, approve: true, arguments: edited }]));
      expect(runs).toEqual(['/tmp/b']);
      expect(userTurns(llm, 1)[1]).toBe(
        'The user edited the arguments of this call before approving it: it ran as Delete with {"path":"/tmp/b"}.\ndeleted /tmp/b',
      );
    }
  });

  it('declined: the tool does not run, the model reads the refusal and the reason as the observation', () => {
    const runs: string[] = [];
    const llm = new MockLLM({ responses: [step('Delete', { path: '/tmp/a' }), finish('Kept.')] });
    const agent = new ReAct({ llm, actions: [deleteTool(runs)], language: 'en' });
    const [ask] = interruptsOf(agent.call('Clean up'));
    const reply = agent.call(resumeWith([{ id: ask!.id, approve: false, reason: 'keep it' }]));
    expect(reply.formatted).toMatchObject({ conclusion: 'Kept.' });
    expect(runs).toEqual([]);
    const observation = userTurns(llm, 1)[1]!;
    expect(observation).toContain('declined');
    expect(observation).toContain('keep it');
  });

  it('a new message instead of a decision declines the waiting call and goes on with the message', () => {
    const runs: string[] = [];
    const llm = new MockLLM({ responses: [step('Delete', { path: '/tmp/a' }), finish('It is noon.')] });
    const agent = new ReAct({ llm, actions: [deleteTool(runs)], language: 'en' });
    agent.call('Clean up');
    const reply = agent.call('Never mind, what time is it?');
    expect(reply.formatted).toMatchObject({ conclusion: 'It is noon.' });
    expect(runs).toEqual([]);
    const seen = llm.calls[1]!.messages.slice(1);
    // Consecutive user turns are joined: the refusal (the observation), then the new message.
    expect(seen.map((m) => m.role)).toEqual(['user', 'assistant', 'user']);
    const after = String(seen[2]!.content);
    expect(after).toContain('the user sent a new message');
    expect(after.endsWith('Never mind, what time is it?')).toBe(true);
    expect(after.indexOf('declined')).toBeLessThan(after.indexOf('Never mind'));
  });

  it('a call that needs no approval runs at once; a resume message with nothing waiting is a clear error', () => {
    const runs: string[] = [];
    const llm = new MockLLM({ responses: [step('Delete', { path: '/tmp/x' }), finish('ok')] });
    const agent = new ReAct({
      llm,
      actions: [deleteTool(runs, ({ path }) => !path.startsWith('/tmp/'))],
      language: 'en',
    });
    expect(agent.call('go').formatted).toMatchObject({ conclusion: 'ok' });
    expect(runs).toEqual(['/tmp/x']);
    expect(() => agent.call(resumeWith([{ id: 'call_2', approve: true }]))).toThrow(
      /no call waiting for a decision/,
    );
  });

  it("an executor's needsApproval applies to ReAct's text calls", () => {
    const runs: string[] = [];
    const llm = new MockLLM({ responses: [step('Delete', { path: '/x' }), finish('ok')] });
    const agent = new ReAct({ llm, actions: [deleteTool(runs, false)], language: 'en' });
    agent.actions = new ActionExecutor({
      actions: [deleteTool(runs, false)],
      hooks: agent.actions.hooks,
      needsApproval: (call) => call.name === 'Delete',
    });
    expect(interruptsOf(agent.call('go'))).toHaveLength(1);
    expect(runs).toEqual([]);
  });

  it('a call run at maxTurn is not taken for a waiting one by the next message', () => {
    const runs: string[] = [];
    let ask = false;
    const llm = new MockLLM({ responses: [step('Delete', { path: '/1' }), finish('fine')] });
    const agent = new ReAct({ llm, actions: [deleteTool(runs, () => ask)], language: 'en', maxTurn: 1 });
    const stopped = agent.call('go');
    expect(stopped.extraInfo).toMatchObject({ maxTurnReached: true });
    expect(runs).toEqual(['/1']);
    // The select agent's memory ends with that call (its result is in the reply only); it ran.
    ask = true;
    const reply = agent.call('and now?');
    expect(interruptsOf(reply)).toEqual([]);
    expect(reply.formatted).toMatchObject({ conclusion: 'fine' });
    expect(userTurns(llm, 1)).toEqual(['go', 'and now?']);
  });

  it('a paused session survives stateDict / loadStateDict (both shapes) into a fresh agent', () => {
    for (const format of ['lagent-ts', 'lagent'] as const) {
      const runs: string[] = [];
      const first = new ReAct({
        llm: new MockLLM({ responses: [step('Delete', { path: '/tmp/a' })] }),
        actions: [deleteTool(runs)],
        language: 'en',
      });
      const [ask] = interruptsOf(first.call('Clean up'));
      const saved = JSON.parse(JSON.stringify(first.stateDict(0, { format })));
      const llm = new MockLLM({ responses: [finish('Done.')] });
      const fresh = new ReAct({ llm, actions: [deleteTool(runs)], language: 'en' });
      fresh.loadStateDict(saved);
      expect(fresh.call(resumeWith([{ id: ask!.id, approve: true }])).formatted).toMatchObject({
        conclusion: 'Done.',
      });
      expect(runs).toEqual(['/tmp/a']);
      expect(llm.calls).toHaveLength(1);
    }
  });

  it('async: an async needsApproval, the interrupt, the resume; nested, the interrupt says where', async () => {
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
    class Outer extends AsyncAgent {
      worker = new AsyncReAct({
        llm: new AsyncMockLLM({ responses: [step('Delete', { path: '/x' }), finish('worker done')] }),
        actions: [remove],
        language: 'en',
      });
      override async forward(messages: AgentMessage[]) {
        const inner = await this.worker.call(messages, { sessionId: 0 });
        return `outer: ${(inner.formatted as { conclusion: string }).conclusion}`;
      }
    }
    const outer = new Outer();
    const [ask] = interruptsOf(await outer.call('go'));
    expect(ask).toMatchObject({ id: 'worker:call_2', path: 'worker', toolCall: { name: 'Delete' } });
    expect(runs).toEqual([]);
    const done = await outer.call(resumeWith([{ id: ask!.id, approve: true }]));
    expect(done.content).toBe('outer: worker done');
    expect(runs).toEqual(['/x']);
  });

  it('durable: the resume replays the model step from the journal (the model is not asked again)', async () => {
    const store = new MemoryStore();
    const runs: string[] = [];
    const remove = asyncTool({
      name: 'Delete',
      parameters: z.object({ path: z.string() }),
      needsApproval: true,
      run: ({ path }) => {
        runs.push(path);
        return `deleted ${path}`;
      },
    });
    const build = (llm: AsyncMockLLM) =>
      new AsyncReAct({ llm, actions: [remove], language: 'en', durable: { store }, name: 'cleaner' });
    const first = build(new AsyncMockLLM({ responses: [step('Delete', { path: '/a' })] }));
    const [ask] = interruptsOf(await first.call('Clean up', { sessionId: 3 }));
    expect(store.listJournals('cleaner', '3', { unfinished: true })).toHaveLength(1);
    const saved = first.stateDict(3);
    const llm = new AsyncMockLLM({ responses: [finish('Done.')] });
    const fresh = build(llm);
    fresh.loadStateDict(saved, 3);
    const done = await fresh.call(resumeWith([{ id: ask!.id, approve: true }]), { sessionId: 3 });
    expect(done.formatted).toMatchObject({ conclusion: 'Done.' });
    expect(runs).toEqual(['/a']);
    expect(llm.calls).toHaveLength(1);
    expect(userTurns(llm, 0)).toEqual(['Clean up', 'deleted /a']);
    expect(fresh.selectAgent.memory!.get(3)!.length).toBe(4);
    expect(store.listJournals('cleaner', '3', { unfinished: true })).toEqual([]);
  });

  it('durable: a resumed call that failed after the approved tool ran goes on without running it again', () => {
    const store = new MemoryStore();
    const runs: string[] = [];
    let n = 0;
    const dying = new MockLLM({
      responses: (() => {
        if (n++ === 1) throw new Error('the process died');
        return step('Delete', { path: '/a' });
      }) as never,
    });
    const build = (llm: MockLLM, on: MemoryStore = store) =>
      new ReAct({
        llm,
        actions: [deleteTool(runs)],
        language: 'en',
        durable: { store: on },
        name: 'cleaner',
      });
    // The first process dies (its failure is never recorded: the call is left unfinished).
    const first = build(dying, dyingStore(store));
    const [ask] = interruptsOf(first.call('Clean up', { sessionId: 's' }));
    expect(() => first.call(resumeWith([{ id: ask!.id, approve: true }]), { sessionId: 's' })).toThrow(
      /the process died/,
    );
    expect(runs).toEqual(['/a']);
    const llm = new MockLLM({ responses: [finish('Done.')] });
    const second = build(llm);
    second.loadStateDict(first.stateDict('s'), 's');
    // The resume's decisions are in the journal: recovering finishes the call, asking nobody again.
    const [reply] = second.recover({ sessionId: 's' }) as AgentMessage[];
    expect(reply!.type).not.toBe('interrupt');
    expect(reply!.formatted).toMatchObject({ conclusion: 'Done.' });
    expect(runs).toEqual(['/a']);
    expect(llm.calls).toHaveLength(1);
    expect(userTurns(llm, 0)).toEqual(['Clean up', 'deleted /a']);
  });

  it('an executor replaced by one without approval rules runs the calls as before', () => {
    const llm = new MockLLM({ responses: [step('Delete', { path: '/a' }), finish('ok')] });
    const agent = new ReAct({ llm, actions: [deleteTool([])], language: 'en' });
    const seen: unknown[] = [];
    const inner = agent.actions;
    agent.actions = {
      name: inner.name,
      noAction: inner.noAction,
      forward: inner.forward.bind(inner),
      call: (message: AgentMessage) => {
        seen.push(message.formatted);
        return new ActionExecutor({ actions: [] }).call('{"name": "NoAction", "parameters": {}}');
      },
    } as unknown as ActionExecutor;
    expect(agent.call('go').formatted).toMatchObject({ conclusion: 'ok' });
    expect(seen).toEqual([{ name: 'Delete', parameters: { path: '/a' } }]);
  });
});

describe('ReAct tool events', () => {
  it('a tool step emits toolStart and toolEnd with the call and its result', () => {
    const runs: string[] = [];
    const llm = new MockLLM({ responses: [step('Delete', { path: '/a' }), finish('ok')] });
    const agent = new ReAct({ llm, actions: [deleteTool(runs, false)], language: 'en' });
    const seen: unknown[][] = [];
    agent.events.on('toolStart', (event) =>
      seen.push(['start', event.toolCalls.map((c) => [c.name, c.arguments])]),
    );
    agent.events.on('toolEnd', (event) => seen.push(['end', String(event.message.content)]));
    agent.call('go');
    expect(seen[0]).toEqual(['start', [['Delete', { path: '/a' }]]]);
    expect(seen[1]![0]).toBe('end');
    expect(String(seen[1]![1])).toContain('deleted /a');
    expect(runs).toEqual(['/a']);
  });
});
