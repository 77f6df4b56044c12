import {
  type AgentMessage,
  AsyncAgent,
  AsyncFunctionCallingAgent,
  asyncTool,
  FunctionCallingAgent,
  interruptsOf,
  MemoryStore,
  NonDeterminismError,
  resumeWith,
  tool,
} from 'lagent-ts';
import { AsyncMockLLM, MockLLM } from 'lagent-ts/testing';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { dyingStore } from '../helpers/durable';

function counter(runs: string[], options: { retrySafe?: boolean; needsApproval?: boolean } = {}) {
  return tool({
    name: 'Send',
    parameters: z.object({ to: z.string() }),
    ...options,
    run: ({ to }) => {
      runs.push(to);
      return `sent to ${to}`;
    },
  });
}

/** A model whose answers are scripted, failing (like a dead process) on the calls listed in `failOn`. */
function flaky(responses: unknown[], failOn: number[]) {
  let n = 0;
  return new MockLLM({
    responses: (() => {
      const i = n++;
      if (failOn.includes(i)) throw new Error('the process died');
      return responses[i] as string;
    }) as never,
  });
}

describe('durable calls', () => {
  it('a call whose process died after a tool ran is recovered: the tool does not run again, the model is not asked again', () => {
    const store = new MemoryStore();
    const runs: string[] = [];
    const responses = [{ toolCalls: [{ name: 'Send', arguments: { to: 'bob' } }] }, 'Sent.'];
    const first = new FunctionCallingAgent({
      llm: flaky(responses, [1]),
      actions: [counter(runs)],
      durable: { store: dyingStore(store) },
      name: 'mailer',
    });
    expect(() => first.call('mail bob', { sessionId: 's' })).toThrow(/the process died/);
    expect(runs).toEqual(['bob']);
    expect(store.listJournals('mailer', 's', { unfinished: true })).toHaveLength(1);
    // Another agent (a fresh process) recovers the call from the store.
    const llm = new MockLLM({ responses: ['Sent.'] });
    const second = new FunctionCallingAgent({
      llm,
      actions: [counter(runs)],
      durable: { store },
      name: 'mailer',
    });
    const [reply] = second.recover({ sessionId: 's' }) as AgentMessage[];
    expect(reply!.content).toBe('Sent.');
    expect(runs).toEqual(['bob']);
    expect(llm.calls).toHaveLength(1);
    // The model saw the recorded tool result.
    expect(llm.calls[0]!.messages.filter((m) => m.role === 'tool').map((m) => m.content)).toEqual([
      'sent to bob',
    ]);
    expect(
      second
        .memory!.get('s')!
        .getMemory()
        .map((m) => m.content),
    ).toEqual(['mail bob', 'Sent.']);
    expect(store.listJournals('mailer', 's', { unfinished: true })).toEqual([]);
    expect((reply!.extraInfo as { callId: string }).callId).toEqual(expect.any(String));
  });

  it('a tool that started and has no result is not run again unless retrySafe: the model is told', () => {
    for (const retrySafe of [false, true]) {
      const store = new MemoryStore();
      const runs: string[] = [];
      let dying = true;
      const send = tool({
        name: 'Send',
        parameters: z.object({ to: z.string() }),
        retrySafe,
        run: ({ to }) => {
          runs.push(to);
          if (dying) throw Object.assign(new Error('killed'), { fatal: true });
          return 'sent';
        },
      });
      // A tool that throws is answered with an error; a process that dies mid-tool leaves only "started":
      // simulate it by writing the journal as the dead process left it.
      const llm = new MockLLM({
        responses: [{ toolCalls: [{ name: 'Send', arguments: { to: 'amy' } }] }, 'ok'],
      });
      const agent = new FunctionCallingAgent({ llm, actions: [send], durable: { store }, name: 'm' });
      const callId = `c-${retrySafe}`;
      dying = false;
      agent.call('mail amy', { sessionId: 1, callId });
      const journal = store.readJournal('m', callId)!;
      const kept = journal.entries.filter((e) => (e.data as { kind: string }).kind !== 'tool');
      const cut = journal.entries.findIndex((e) => (e.data as { kind: string }).kind === 'tool');
      store.deleteJournal('m', callId);
      for (const entry of journal.entries.slice(0, cut)) store.appendJournal('m', '1', callId, entry.data);
      expect(kept.length).toBeGreaterThan(0);
      agent.reset(1);
      runs.length = 0;
      const llm2 = new MockLLM({ responses: ['ok'] });
      const again = new FunctionCallingAgent({ llm: llm2, actions: [send], durable: { store }, name: 'm' });
      again.recover({ sessionId: 1 });
      const toolText = llm2.calls[0]!.messages.find((m) => m.role === 'tool')!.content as string;
      if (retrySafe) {
        expect(runs).toEqual(['amy']);
        expect(toolText).toBe('sent');
      } else {
        expect(runs).toEqual([]);
        expect(toolText).toMatch(/outcome is unknown/);
      }
    }
  });

  it('a replay that makes a different call fails with NonDeterminismError naming both', () => {
    const store = new MemoryStore();
    const runs: string[] = [];
    const first = new FunctionCallingAgent({
      llm: flaky([{ toolCalls: [{ name: 'Send', arguments: { to: 'bob' } }] }, 'x'], [1]),
      actions: [counter(runs)],
      durable: { store: dyingStore(store) },
      name: 'n',
    });
    expect(() => first.call('go', { callId: 'c1' })).toThrow();
    // The replayed model answer calls Send, which this agent no longer has: another step at that place.
    const other = tool({ name: 'Other', parameters: z.object({ to: z.string() }), run: () => 'x' });
    const second = new FunctionCallingAgent({
      llm: new MockLLM({ responses: ['x'] }),
      actions: [other],
      durable: { store },
      name: 'n',
    });
    const error = (() => {
      try {
        second.call('go', { callId: 'c1' });
      } catch (caught) {
        return caught;
      }
    })();
    expect(error).toBeInstanceOf(NonDeterminismError);
    expect((error as Error).message).toMatch(/"Send".*"InvalidAction"/);
  });

  it('a composite with durable: approval in a nested agent resumes without running the earlier steps again', async () => {
    const store = new MemoryStore();
    const runs: string[] = [];
    const send = asyncTool({
      name: 'Send',
      parameters: z.object({ to: z.string() }),
      needsApproval: true,
      run: ({ to }) => {
        runs.push(to);
        return `sent to ${to}`;
      },
    });
    const plannerLLM = new AsyncMockLLM({ responses: ['plan: mail bob'] });
    const workerLLM = new AsyncMockLLM({
      responses: [{ toolCalls: [{ name: 'Send', arguments: { to: 'bob' } }] }, 'mailed'],
    });
    class Assistant extends AsyncAgent {
      planner = new AsyncAgent({ llm: plannerLLM, name: 'planner' });
      worker = new AsyncFunctionCallingAgent({ llm: workerLLM, actions: [send], name: 'worker' });
      override async forward(messages: AgentMessage[], options: { sessionId: string | number }) {
        const plan = await this.planner.call(messages, { sessionId: options.sessionId });
        const done = await this.worker.call(plan.content as string, { sessionId: options.sessionId });
        return `${plan.content} -> ${done.content}`;
      }
    }
    const assistant = new Assistant({ durable: { store } });
    const reply = await assistant.call('mail bob', { sessionId: 7 });
    const [ask] = interruptsOf(reply);
    expect(ask).toMatchObject({ path: 'worker', toolCall: { name: 'Send' } });
    expect(runs).toEqual([]);
    const saved = assistant.stateDict(7);
    // A fresh process: the same tree, the saved memories, the same store.
    const fresh = new Assistant({ durable: { store } });
    fresh.planner.llm = new AsyncMockLLM({ responses: ['never asked'] });
    fresh.worker.agent.llm = new AsyncMockLLM({ responses: ['mailed'] });
    fresh.loadStateDict(saved, 7);
    const done = await fresh.call(resumeWith([{ id: ask!.id, approve: true }]), { sessionId: 7 });
    expect(done.content).toBe('plan: mail bob -> mailed');
    expect(runs).toEqual(['bob']);
    expect((fresh.planner.llm as AsyncMockLLM).calls).toHaveLength(0);
    expect(
      fresh
        .memory!.get(7)!
        .getMemory()
        .map((m) => m.content),
    ).toEqual(['mail bob', 'plan: mail bob -> mailed']);
    expect(fresh.planner.memory!.get(7)!.length).toBe(2);
  });
});
