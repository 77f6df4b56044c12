import {
  AgentForInternLM,
  type AgentMessage,
  AgentStatusCode,
  AsyncAgent,
  AsyncAgentForInternLM,
  AsyncStreamingAgentForInternLM,
  asyncTool,
  interruptsOf,
  MemoryStore,
  resumeWith,
  StreamingAgentForInternLM,
  tool,
} from 'lagent-ts';
import { AsyncMockLLM, MockLLM } from 'lagent-ts/testing';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { interpreterCall, pluginCall } from '../../helpers/internlm-replies';

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

function python(runs: string[]) {
  return tool({
    name: 'IPythonInteractive',
    description: 'Runs Python code',
    parameters: z.object({ command: z.string() }),
    needsApproval: true,
    run: ({ command }) => {
      runs.push(command);
      return `ran ${command}`;
    },
  });
}

/** The `environment` turns (tool results) the model saw in one request. */
function environment(llm: MockLLM | AsyncMockLLM, request: number): string[] {
  return llm.calls[request]!.messages.filter((m) => m.role === 'environment').map((m) => String(m.content));
}

const S = AgentStatusCode;

describe('tool approval in the InternLM agents', () => {
  it('stops before a plugin call that needs approval: the interrupt names it, nothing ran', () => {
    const runs: string[] = [];
    const llm = new MockLLM({ responses: [pluginCall('Delete', { path: '/tmp/a' }), 'Done.'] });
    const agent = new AgentForInternLM({ llm, plugins: [deleteTool(runs)] });
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
    expect(agent.agent.memory!.get('s')!.length).toBe(2);
  });

  it('approved: the call runs and the model reads its result in the environment role', () => {
    const runs: string[] = [];
    const llm = new MockLLM({ responses: [pluginCall('Delete', { path: '/tmp/a' }), 'Done.'] });
    const agent = new AgentForInternLM({ llm, plugins: [deleteTool(runs)] });
    const [ask] = interruptsOf(agent.call('Clean up'));
    const reply = agent.call(resumeWith([{ id: ask!.id, approve: true }]));
    expect(reply.content).toBe('Done.');
    expect(runs).toEqual(['/tmp/a']);
    expect(environment(llm, 1)).toEqual(['deleted /tmp/a']);
    expect(
      agent
        .memory!.get(0)!
        .getMemory()
        .map((m) => m.content),
    ).toEqual(['Clean up', 'Done.']);
  });

  it('approved with edited arguments: the plugin runs with them', () => {
    const runs: string[] = [];
    const llm = new MockLLM({ responses: [pluginCall('Delete', { path: '/tmp/a' }), 'Done.'] });
    const agent = new AgentForInternLM({ llm, plugins: [deleteTool(runs)] });
    const [ask] = interruptsOf(agent.call('Clean up'));
    agent.call(resumeWith([{ id: ask!.id, approve: true, arguments: { path: '/tmp/b' } }]));
    expect(runs).toEqual(['/tmp/b']);
    // The model wrote /tmp/a: its observation says a person changed that, and what ran.
    expect(environment(llm, 1)).toEqual([
      'The user edited the arguments of this call before approving it: it ran as Delete with {"path":"/tmp/b"}.\ndeleted /tmp/b',
    ]);
  });

  it('declined: the plugin does not run, the model reads the refusal and the reason', () => {
    const runs: string[] = [];
    const llm = new MockLLM({ responses: [pluginCall('Delete', { path: '/tmp/a' }), 'Kept.'] });
    const agent = new AgentForInternLM({ llm, plugins: [deleteTool(runs)] });
    const [ask] = interruptsOf(agent.call('Clean up'));
    expect(agent.call(resumeWith([{ id: ask!.id, approve: false, reason: 'keep it' }])).content).toBe(
      'Kept.',
    );
    expect(runs).toEqual([]);
    const [seen] = environment(llm, 1);
    expect(seen).toContain('declined');
    expect(seen).toContain('keep it');
    expect(llm.calls[1]!.messages.find((m) => m.role === 'environment')!.name).toBe('plugin');
  });

  it('a new message instead of a decision declines the waiting call and goes on', () => {
    const runs: string[] = [];
    const llm = new MockLLM({ responses: [pluginCall('Delete', { path: '/tmp/a' }), 'It is noon.'] });
    const agent = new AgentForInternLM({ llm, plugins: [deleteTool(runs)] });
    agent.call('Clean up');
    expect(agent.call('Never mind, what time is it?').content).toBe('It is noon.');
    expect(runs).toEqual([]);
    const seen = llm.calls[1]!.messages.filter((m) => m.role !== 'system');
    expect(seen.map((m) => m.role)).toEqual(['user', 'assistant', 'environment', 'user']);
    expect(seen[2]!.content).toContain('the user sent a new message');
    expect(seen[3]!.content).toBe('Never mind, what time is it?');
  });

  it('code for an interpreter that needs approval: approved with edited code, the edited code runs', () => {
    const runs: string[] = [];
    const llm = new MockLLM({ responses: [interpreterCall('rm()'), 'ok'] });
    const agent = new AgentForInternLM({ llm, interpreter: python(runs) });
    const [ask] = interruptsOf(agent.call('go'));
    expect(ask!.toolCall).toEqual({
      id: 'call_2',
      name: 'IPythonInteractive',
      arguments: { command: 'rm()' },
    });
    agent.call(resumeWith([{ id: ask!.id, approve: true, arguments: { command: 'print(1)' } }]));
    expect(runs).toEqual(['print(1)']);
    expect(environment(llm, 1)).toEqual([
      'The user edited the arguments of this call before approving it: it ran as IPythonInteractive with {"command":"print(1)"}.\nran print(1)',
    ]);
  });

  it('a call run at maxTurn is not taken for a waiting one by the next message', () => {
    const runs: string[] = [];
    let ask = false;
    const llm = new MockLLM({ responses: [pluginCall('Delete', { path: '/1' }), 'fine'] });
    const agent = new AgentForInternLM({ llm, plugins: [deleteTool(runs, () => ask)], maxTurn: 1 });
    expect(agent.call('go').extraInfo).toMatchObject({ maxTurnReached: true });
    expect(runs).toEqual(['/1']);
    ask = true;
    const reply = agent.call('and now?');
    expect(interruptsOf(reply)).toEqual([]);
    expect(reply.content).toBe('fine');
    expect(environment(llm, 1)).toEqual([]);
  });

  it('a resume message on a session with nothing waiting is a clear error', () => {
    const agent = new AgentForInternLM({
      llm: new MockLLM({ responses: ['hi'] }),
      plugins: [deleteTool([])],
    });
    expect(() => agent.call(resumeWith([{ id: 'call_2', approve: true }]))).toThrow(
      /no call waiting for a decision/,
    );
  });

  it('a paused session survives stateDict / loadStateDict (both shapes) into a fresh agent', () => {
    for (const format of ['lagent-ts', 'lagent'] as const) {
      const runs: string[] = [];
      const first = new AgentForInternLM({
        llm: new MockLLM({ responses: [pluginCall('Delete', { path: '/tmp/a' })] }),
        plugins: [deleteTool(runs)],
      });
      const [ask] = interruptsOf(first.call('Clean up'));
      const saved = JSON.parse(JSON.stringify(first.stateDict(0, { format })));
      const llm = new MockLLM({ responses: ['Done.'] });
      const fresh = new AgentForInternLM({ llm, plugins: [deleteTool(runs)] });
      fresh.loadStateDict(saved);
      expect(fresh.call(resumeWith([{ id: ask!.id, approve: true }])).content).toBe('Done.');
      expect(runs).toEqual(['/tmp/a']);
      expect(llm.calls).toHaveLength(1);
    }
  });

  it('async, nested in a composite: the interrupt says where, and the resume reaches it', async () => {
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
      worker = new AsyncAgentForInternLM({
        llm: new AsyncMockLLM({ responses: [pluginCall('Delete', { path: '/x' }), 'worker done'] }),
        plugins: [remove],
      });
      override async forward(messages: AgentMessage[]) {
        const inner = await this.worker.call(messages, { sessionId: 0 });
        return `outer: ${inner.content}`;
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

  it('sync streaming: the interrupt is the final chunk; the resume streams the call, its result, the answer', () => {
    const runs: string[] = [];
    const llm = new MockLLM({ responses: [pluginCall('Delete', { path: '/tmp/a' }), 'Done.'] });
    const agent = new StreamingAgentForInternLM({ llm, plugins: [deleteTool(runs)] });
    const chunks = [...agent.call('Clean up')];
    expect(chunks.some((c) => c.streamState === S.PLUGIN_RETURN)).toBe(false);
    const asks = interruptsOf(chunks.at(-1));
    expect(asks).toHaveLength(1);
    const after = [...agent.call(resumeWith([{ id: asks[0]!.id, approve: true }]))];
    const states = after.map((c) => c.streamState);
    expect(states.indexOf(S.PLUGIN_END)).toBeLessThan(states.indexOf(S.PLUGIN_RETURN));
    expect(after.find((c) => c.streamState === S.PLUGIN_RETURN)!.content).toBe('deleted /tmp/a');
    expect(after.at(-1)!.content).toBe('Done.');
    expect(runs).toEqual(['/tmp/a']);
  });

  it('async streaming: the same; declined, the refusal is the streamed result', async () => {
    const runs: string[] = [];
    const llm = new AsyncMockLLM({ responses: [pluginCall('Delete', { path: '/tmp/a' }), 'Kept.'] });
    const agent = new AsyncStreamingAgentForInternLM({ llm, plugins: [deleteTool(runs)] });
    let last: AgentMessage | undefined;
    for await (const chunk of agent.call('Clean up')) last = chunk;
    const [ask] = interruptsOf(last);
    const after: AgentMessage[] = [];
    for await (const chunk of agent.call(resumeWith([{ id: ask!.id, approve: false, reason: 'no' }])))
      after.push(chunk);
    expect(String(after.find((c) => c.streamState === S.PLUGIN_RETURN)!.content)).toContain('declined');
    expect(after.at(-1)!.content).toBe('Kept.');
    expect(runs).toEqual([]);
  });

  it('durable: the resume replays the model step from the journal (the model is not asked again)', async () => {
    const store = new MemoryStore();
    const runs: string[] = [];
    const build = (llm: AsyncMockLLM) =>
      new AsyncAgentForInternLM({ llm, plugins: [deleteTool(runs)], durable: { store }, name: 'cleaner' });
    const first = build(new AsyncMockLLM({ responses: [pluginCall('Delete', { path: '/a' })] }));
    const [ask] = interruptsOf(await first.call('Clean up', { sessionId: 3 }));
    const saved = first.stateDict(3);
    const llm = new AsyncMockLLM({ responses: ['Done.'] });
    const fresh = build(llm);
    fresh.loadStateDict(saved, 3);
    const done = await fresh.call(resumeWith([{ id: ask!.id, approve: true }]), { sessionId: 3 });
    expect(done.content).toBe('Done.');
    expect(runs).toEqual(['/a']);
    expect(llm.calls).toHaveLength(1);
    expect(environment(llm, 0)).toEqual(['deleted /a']);
    expect(fresh.agent.memory!.get(3)!.length).toBe(4);
    expect(store.listJournals('cleaner', '3', { unfinished: true })).toEqual([]);
  });

  it('durable, streaming: the model step streamed before the interrupt is replayed, not asked again', () => {
    const store = new MemoryStore();
    const runs: string[] = [];
    const build = (llm: MockLLM) =>
      new StreamingAgentForInternLM({
        llm,
        plugins: [deleteTool(runs)],
        durable: { store },
        name: 'cleaner',
      });
    const first = build(new MockLLM({ responses: [pluginCall('Delete', { path: '/a' })] }));
    const [ask] = interruptsOf([...first.call('Clean up', { sessionId: 3 })].at(-1));
    const saved = first.stateDict(3);
    const llm = new MockLLM({ responses: ['Done.'] });
    const fresh = build(llm);
    fresh.loadStateDict(saved, 3);
    const after = [...fresh.call(resumeWith([{ id: ask!.id, approve: true }]), { sessionId: 3 })];
    expect(after.at(-1)!.content).toBe('Done.');
    expect(runs).toEqual(['/a']);
    expect(llm.calls).toHaveLength(1);
  });
});
