import type { ChatMessage } from 'lagent-ts';
import {
  Agent,
  type AgentMessage,
  AsyncFunctionCallingAgent,
  asyncTool,
  FunctionCallingAgent,
  MemoryStore,
  NonDeterminismError,
  tool,
} from 'lagent-ts';
import { AsyncMockLLM, MockLLM, type MockReply } from 'lagent-ts/testing';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { dyingStore } from '../helpers/durable';

/** A model that answers from the conversation: a Send, then text; ids fixed so replays match. */
function answer(messages: ChatMessage[]): MockReply {
  const users = messages.filter((m) => m.role === 'user').length;
  const lastUser = messages.findLastIndex((m) => m.role === 'user');
  const round = messages.slice(lastUser).filter((m) => m.role === 'assistant').length;
  if (round === 0)
    return { toolCalls: [{ id: `c${users}r0`, name: 'Send', arguments: { to: `u${users}` } }] };
  if (round === 1)
    return { toolCalls: [{ id: `c${users}r1`, name: 'Send', arguments: { to: `v${users}` } }] };
  return { content: `done ${users}` };
}

function sendTool(runs: string[]) {
  return tool({
    name: 'Send',
    parameters: z.object({ to: z.string() }),
    run: ({ to }) => {
      runs.push(to);
      return `sent to ${to}`;
    },
  });
}

/** The contents of a session's memories, by key. */
function contents(agent: { stateDict(id: string): Record<string, unknown> }, sessionId: string) {
  return JSON.stringify(agent.stateDict(sessionId));
}

/** Model answers of the failing call written before its nth write failed (writes 2, 5, 8 are models). */
function modelWritten(n: number): number {
  return [2, 5, 8].filter((w) => w < n).length;
}

/** A store whose nth journal write (counting from 1) throws, like a disk that failed. */
class FailingStore extends MemoryStore {
  writes = 0;
  failAt = 0;
  override appendJournal(namespace: string, sessionId: string, callId: string, data: unknown): number {
    this.writes++;
    if (this.writes === this.failAt) throw new Error('disk failed');
    return super.appendJournal(namespace, sessionId, callId, data);
  }
}

describe('durable calls that fail', () => {
  it('an abort during a replay fails the call cleanly; a retry with its callId completes it', async () => {
    const store = new MemoryStore();
    const runs: string[] = [];
    const send = asyncTool({
      name: 'Send',
      parameters: z.object({ to: z.string() }),
      run: ({ to }) => {
        runs.push(to);
        return `sent to ${to}`;
      },
    });
    let dead = true;
    const first = new AsyncFunctionCallingAgent({
      llm: new AsyncMockLLM({
        responses: (messages) => {
          const reply = answer(messages);
          if (reply.content !== undefined && dead) throw new Error('the process died');
          return reply;
        },
      }),
      actions: [send],
      durable: { store: dyingStore(store) },
      name: 'a',
    });
    await expect(first.call('go', { sessionId: 's', callId: 'c1' })).rejects.toThrow(/the process died/);
    expect(runs).toEqual(['u1', 'v1']);
    dead = false;
    // The replay returns the recorded steps, then waits for the model, and is aborted there.
    const slow = new AsyncMockLLM({ responses: answer, latencyMs: 5_000 });
    const replaying = new AsyncFunctionCallingAgent({
      llm: slow,
      actions: [send],
      durable: { store },
      name: 'a',
    });
    const controller = new AbortController();
    const call = replaying.call(undefined, { sessionId: 's', callId: 'c1', signal: controller.signal });
    setTimeout(() => controller.abort(new Error('stopped by the user')), 50);
    await expect(call).rejects.toThrow(/stopped by the user/);
    expect(slow.calls).toHaveLength(1);
    expect(runs).toEqual(['u1', 'v1']);
    // The aborted replay failed: the call is kept as failed (recover leaves it), with what it did.
    expect(store.listJournals('a', 's', { unfinished: true })).toEqual([]);
    expect(await replaying.recover({ sessionId: 's' })).toEqual([]);
    // Nothing of the aborted replay stays in memory.
    expect(replaying.stateDict('s')).toEqual({ memory: [], 'agent.memory': [] });
    const llm = new AsyncMockLLM({ responses: answer });
    replaying.agent.llm = llm;
    const reply = await replaying.call('go', { sessionId: 's', callId: 'c1' });
    expect(reply.content).toBe('done 1');
    expect(llm.calls).toHaveLength(1);
    expect(runs).toEqual(['u1', 'v1']);
    expect(store.listJournals('a', 's', { unfinished: true })).toEqual([]);
    expect(
      replaying
        .memory!.get('s')!
        .getMemory()
        .map((m) => m.content),
    ).toEqual(['go', 'done 1']);
  });

  it('a session deleted from the store takes its journals: recover finds nothing, a new call starts clean', () => {
    const store = new MemoryStore();
    const runs: string[] = [];
    let dead = true;
    const llm = new MockLLM({
      responses: (messages) => {
        const reply = answer(messages);
        if (reply.content !== undefined && dead) throw new Error('the process died');
        return reply;
      },
    });
    const make = (on: MemoryStore) =>
      new FunctionCallingAgent({
        llm,
        actions: [sendTool(runs)],
        durable: { store: on },
        memory: { store: on },
        name: 'd',
      });
    expect(() => make(dyingStore(store)).call('first', { sessionId: 's' })).toThrow(/the process died/);
    expect(store.listJournals('d', 's', { unfinished: true })).toHaveLength(1);
    store.deleteSession('d', 's');
    expect(store.listJournals('d', 's')).toEqual([]);
    dead = false;
    const fresh = make(store);
    expect(fresh.recover({ sessionId: 's' })).toEqual([]);
    runs.length = 0;
    const reply = fresh.call('again', { sessionId: 's' });
    expect(reply.content).toBe('done 1');
    expect(runs).toEqual(['u1', 'v1']);
    expect(
      fresh
        .memory!.get('s')!
        .getMemory()
        .map((m) => m.content),
    ).toEqual(['again', 'done 1']);
  });

  it('agent.reset clears memory, not journals: recover replays the call onto the emptied session', () => {
    const store = new MemoryStore();
    const runs: string[] = [];
    let dead = true;
    const llm = new MockLLM({
      responses: (messages) => {
        const reply = answer(messages);
        if (reply.content !== undefined && dead) throw new Error('the process died');
        return reply;
      },
    });
    const agent = new FunctionCallingAgent({
      llm,
      actions: [sendTool(runs)],
      durable: { store: dyingStore(store) },
      name: 'r',
    });
    dead = false;
    agent.call('one', { sessionId: 's' });
    dead = true;
    expect(() => agent.call('two', { sessionId: 's' })).toThrow(/the process died/);
    agent.reset('s', { recursive: true });
    dead = false;
    const asked = llm.calls.length;
    const [reply] = agent.recover({ sessionId: 's' }) as AgentMessage[];
    // The call's recorded inputs and steps, on a session that now holds only this call: the one step left
    // asks the model, which sees a conversation of one user message.
    expect(reply!.content).toBe('done 1');
    expect(llm.calls.length - asked).toBe(1);
    expect(runs).toEqual(['u1', 'v1', 'u2', 'v2']);
    expect(
      agent
        .memory!.get('s')!
        .getMemory()
        .map((m) => m.content),
    ).toEqual(['two', 'done 1']);
  });

  it('a store failing on any journal write fails the call and rolls memory back; a retry with its callId then finishes it without doing anything twice', () => {
    // The session has one finished call before the one whose writes fail.
    const reference = (() => {
      const store = new MemoryStore();
      const agent = new FunctionCallingAgent({
        llm: new MockLLM({ responses: answer }),
        actions: [sendTool([])],
        durable: { store },
        name: 'f',
      });
      agent.call('one', { sessionId: 's' });
      const before = contents(agent, 's');
      // Every entry but the last (the outcome, written with the finish).
      const writesBefore = store.readJournal('f', store.listJournals('f', 's')[0]!)!.entries.length - 1;
      agent.call('two', { sessionId: 's' });
      return { before, after: contents(agent, 's'), writesPerCall: writesBefore };
    })();
    // begin, then model, Send started, Send result, model, Send started, Send result, model.
    expect(reference.writesPerCall).toBe(8);
    let unknownSeen = 0;
    for (let n = 1; n <= reference.writesPerCall; n++) {
      const store = new FailingStore();
      const runs: string[] = [];
      const llm = new MockLLM({ responses: answer });
      const agent = new FunctionCallingAgent({
        llm,
        actions: [sendTool(runs)],
        durable: { store },
        name: 'f',
      });
      agent.call('one', { sessionId: 's' });
      store.failAt = store.writes + n;
      const callId = `two-${n}`;
      expect(() => agent.call('two', { sessionId: 's', callId }), `write ${n}`).toThrow(/disk failed/);
      expect(contents(agent, 's'), `write ${n}`).toBe(reference.before);
      const asked = llm.calls.length;
      // The call failed (it was not left by a dead process): recover leaves it, a retry goes on with it.
      expect(agent.recover({ sessionId: 's' })).toEqual([]);
      expect(agent.call('two', { sessionId: 's', callId }).content, `write ${n}`).toBe('done 2');
      // No Send ran twice; one whose result was not written comes back as unknown instead of running again.
      expect(new Set(runs).size, `write ${n}`).toBe(runs.length);
      const after = JSON.parse(contents(agent, 's')) as Record<string, { content: unknown }[]>;
      const unknown = after['agent.memory']!.flatMap((m) =>
        Array.isArray(m.content) ? m.content : [],
      ).filter((r) => /outcome is unknown/.test(String((r as { errmsg?: unknown }).errmsg)));
      unknownSeen += unknown.length;
      if (unknown.length === 0) expect(JSON.stringify(after), `write ${n}`).toBe(reference.after);
      else {
        // The Send whose result was not written ran once, in the failed call.
        expect(unknown, `write ${n}`).toHaveLength(1);
        expect(runs.filter((to) => to === (unknown[0] as { args: { to: string } }).args.to)).toHaveLength(1);
      }
      // The model is asked only for the steps the journal has no answer for: none again of the 3.
      expect(llm.calls.length - asked, `write ${n}`).toBe(n === 1 ? 3 : 3 - modelWritten(n));
    }
    expect(unknownSeen).toBeGreaterThan(0);
  });

  it('a call made after a failed one: the failed call is not replayed onto the session any more', () => {
    const store = new MemoryStore();
    const runs: string[] = [];
    let failing = true;
    const llm = new MockLLM({
      responses: (messages) => {
        const reply = answer(messages);
        if (reply.content === 'done 2' && failing) throw new Error('the model is down');
        return reply;
      },
    });
    const agent = new FunctionCallingAgent({ llm, actions: [sendTool(runs)], durable: { store }, name: 'm' });
    agent.call('one', { sessionId: 's' });
    expect(() => agent.call('two', { sessionId: 's' })).toThrow(/the model is down/);
    failing = false;
    // The user goes on: the failed call was rolled back, a new one is made.
    const reply = agent.call('three', { sessionId: 's' });
    const memory = () =>
      agent
        .memory!.get('s')!
        .getMemory()
        .map((m) => m.content);
    expect(memory()).toEqual(['one', 'done 1', 'three', reply.content]);
    const asked = llm.calls.length;
    // Neither recover nor a resume message may take the session back to where the failed call began.
    expect(agent.recover({ sessionId: 's' })).toEqual([]);
    expect(store.listJournals('m', 's', { unfinished: true })).toEqual([]);
    expect(memory()).toEqual(['one', 'done 1', 'three', reply.content]);
    expect(llm.calls.length).toBe(asked);
    expect(runs).toEqual(['u1', 'v1', 'u2', 'v2', 'u2', 'v2']);
  });

  it('a replay in another process that makes another call names both steps in its NonDeterminismError', () => {
    const store = new MemoryStore();
    let dead = true;
    /** A composite whose order of sub-agents comes from its process's configuration. */
    class Pair extends Agent {
      a = new Agent({ llm: new MockLLM({ responses: () => 'from a' }), name: 'a' });
      b = new Agent({
        llm: new MockLLM({
          responses: () => {
            if (dead) throw new Error('the process died');
            return 'from b';
          },
        }),
        name: 'b',
      });
      constructor(readonly order: ('a' | 'b')[]) {
        super({ durable: { store: dead ? dyingStore(store) : store }, name: 'pair' });
      }
      override forward(messages: AgentMessage[], options: { sessionId: string | number }) {
        const [first, second] = this.order.map((name) => this[name]);
        const one = first!.call(messages, { sessionId: options.sessionId });
        const two = second!.call(one, { sessionId: options.sessionId });
        return `${one.content}, ${two.content}`;
      }
    }
    expect(() => new Pair(['a', 'b']).call('go', { sessionId: 's', callId: 'c1' })).toThrow(
      /the process died/,
    );
    dead = false;
    const other = new Pair(['b', 'a']);
    let error: unknown;
    try {
      other.recover({ sessionId: 's' });
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(NonDeterminismError);
    expect((error as Error).message).toMatch(
      /step r\.0\S* was a model call of "a" .* now is a model call of "b"/,
    );
    // The failed replay is kept as a failed call: it is not recovered again; a retry fails the same way.
    expect(store.listJournals('pair', 's', { unfinished: true })).toEqual([]);
    const outcome = store.readJournal('pair', 'c1')!.entries.at(-1)!.data as {
      result: { status: string; error: string };
    };
    expect(outcome.result).toMatchObject({ status: 'failed', error: expect.stringMatching(/step r\.0/) });
    // Every memory is as before the replay.
    expect(other.stateDict('s')).toEqual({ memory: [], 'a.memory': [], 'b.memory': [] });
  });
});
