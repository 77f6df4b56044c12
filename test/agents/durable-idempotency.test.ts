import type { ChatMessage } from 'lagent-ts';
import {
  AsyncFunctionCallingAgent,
  asyncTool,
  BudgetExceededError,
  FunctionCallingAgent,
  interruptsOf,
  MemoryStore,
  resumeWith,
  type SessionStore,
  StoreConflictError,
  tool,
  ValidationError,
} from 'lagent-ts';
import { AsyncMockLLM, MockLLM, type MockReply } from 'lagent-ts/testing';
import { describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { dyingStore } from '../helpers/durable';

/*
 * Durable calls as retries see them: a call id belongs to its session and its input; a finished call answers a
 * retry from its journal; a failed one goes on from what it did; one a process left is recovered before its
 * session goes on; a holder whose lease another took records nothing more and starts no tool.
 */

/** A model that answers from the conversation: a Send, then text; ids fixed so replays match. */
function answer(messages: ChatMessage[]): MockReply {
  const users = messages.filter((m) => m.role === 'user').length;
  const lastUser = messages.findLastIndex((m) => m.role === 'user');
  const round = messages.slice(lastUser).filter((m) => m.role === 'assistant').length;
  if (round === 0)
    return { toolCalls: [{ id: `c${users}r0`, name: 'Send', arguments: { to: `u${users}` } }] };
  return { content: `done ${users}` };
}

function sendTool(runs: string[], needsApproval = false) {
  return tool({
    name: 'Send',
    parameters: z.object({ to: z.string() }),
    needsApproval,
    run: ({ to }) => {
      runs.push(to);
      return `sent to ${to}`;
    },
  });
}

function asyncSendTool(runs: string[], gate?: () => Promise<void>) {
  return asyncTool({
    name: 'Send',
    parameters: z.object({ to: z.string() }),
    run: async ({ to }) => {
      await gate?.();
      runs.push(to);
      return `sent to ${to}`;
    },
  });
}

function mailer(store: SessionStore, runs: string[], llm = new MockLLM({ responses: answer })) {
  return new FunctionCallingAgent({
    llm,
    actions: [sendTool(runs)],
    durable: { store },
    memory: store.synchronous ? { store } : undefined,
    name: 'mailer',
  });
}

const contents = (agent: { stateDict(id: string): Record<string, unknown> }, sessionId: string) =>
  JSON.stringify(agent.stateDict(sessionId));

describe('durable calls: call ids, retries and recovery', () => {
  it('a finished call tried again with its callId gives the same reply back: nothing runs, memory stays', () => {
    const store = new MemoryStore();
    const runs: string[] = [];
    const llm = new MockLLM({ responses: answer });
    const agent = mailer(store, runs, llm);
    const first = agent.call('mail', { sessionId: 's', callId: 'refund-1' });
    expect(first.content).toBe('done 1');
    const before = {
      asked: llm.calls.length,
      memory: contents(agent, 's'),
      stored: store.readSession('mailer', 's'),
    };
    // The same request again (a client that did not get the answer), here and in a fresh process.
    const again = agent.call('mail', { sessionId: 's', callId: 'refund-1' });
    const elsewhere = mailer(store, runs, llm).call('mail', { sessionId: 's', callId: 'refund-1' });
    for (const reply of [again, elsewhere]) {
      expect(reply.content).toBe('done 1');
      expect(reply.extraInfo).toEqual({ callId: 'refund-1', idempotentReplay: true });
    }
    expect(llm.calls).toHaveLength(before.asked);
    expect(runs).toEqual(['u1']);
    expect(contents(agent, 's')).toBe(before.memory);
    expect(store.readSession('mailer', 's')).toEqual(before.stored);
  });

  it('a callId with another input, or of another session, is a ValidationError; nothing runs, nothing leaks', () => {
    const store = new MemoryStore();
    const runs: string[] = [];
    const llm = new MockLLM({ responses: answer });
    const agent = mailer(store, runs, llm);
    agent.call('refund alice $80', { sessionId: 'alice', callId: 'c-1' });
    const asked = llm.calls.length;
    const bob = contents(agent, 'bob');
    const other = (() => {
      try {
        agent.call('refund bob $500', { sessionId: 'alice', callId: 'c-1' });
      } catch (error) {
        return error;
      }
    })();
    expect(other).toBeInstanceOf(ValidationError);
    expect((other as Error).message).toMatch(/was made with another input/);
    const stolen = (() => {
      try {
        agent.call('anything', { sessionId: 'bob', callId: 'c-1' });
      } catch (error) {
        return error;
      }
    })();
    expect(stolen).toBeInstanceOf(ValidationError);
    expect((stolen as Error).message).toMatch(/names a call of another session/);
    expect((stolen as Error).message).not.toMatch(/alice|refund/);
    expect(llm.calls).toHaveLength(asked);
    expect(runs).toEqual(['u1']);
    expect(contents(agent, 'bob')).toBe(bob);
    expect(store.readSession('mailer', 'bob')).toBeUndefined();
  });

  it('the callId of a paused call on another session gets neither its interrupt nor its input, and cannot approve it', async () => {
    const store = new MemoryStore();
    const runs: string[] = [];
    const agent = new FunctionCallingAgent({
      llm: new MockLLM({ responses: answer }),
      actions: [sendTool(runs, true)],
      durable: { store },
      name: 'payer',
    });
    const paused = agent.call('pay alice', { sessionId: 'a', callId: 'pay-a' });
    const [ask] = interruptsOf(paused);
    expect(ask?.toolCall.name).toBe('Send');
    // Another session with the paused call's id: refused before anything of session a is touched or shown.
    expect(() => agent.call('hello', { sessionId: 'b', callId: 'pay-a' })).toThrow(ValidationError);
    expect(() =>
      agent.call(resumeWith([{ id: ask!.id, approve: true }]), { sessionId: 'b', callId: 'pay-a' }),
    ).toThrow(/another session/);
    expect(agent.stateDict('b')).toEqual({ memory: [], 'agent.memory': [] });
    expect(runs).toEqual([]);
    // The approval on its own session runs the transfer once.
    const done = agent.call(resumeWith([{ id: ask!.id, approve: true }]), { sessionId: 'a' });
    expect(done.content).toBe('done 1');
    expect(runs).toEqual(['u1']);
  });

  it('a new message on a session whose call a process left unfinished recovers that call first, with an event', async () => {
    const store = new MemoryStore();
    const runs: string[] = [];
    let dead = true;
    const dying = new FunctionCallingAgent({
      llm: new MockLLM({
        responses: (messages) => {
          const reply = answer(messages);
          if (reply.content !== undefined && dead) throw new Error('the process died');
          return reply;
        },
      }),
      actions: [sendTool(runs)],
      durable: { store: dyingStore(store) },
      memory: { store: dyingStore(store) },
      name: 'mailer',
    });
    expect(() => dying.call('first', { sessionId: 's' })).toThrow(/the process died/);
    expect(runs).toEqual(['u1']);
    dead = false;
    // Another process: the next message on the session.
    const llm = new MockLLM({ responses: answer });
    const next = mailer(store, runs, llm);
    const recovered: { callId: string; content: unknown }[] = [];
    next.events.on('callRecovered', ({ callId, message }) =>
      recovered.push({ callId, content: message.content }),
    );
    const reply = next.call('second', { sessionId: 's' });
    expect(reply.content).toBe('done 2');
    expect(recovered).toEqual([{ callId: expect.any(String), content: 'done 1' }]);
    // The first call's Send did not run again; its last model step and the second call's two were asked.
    expect(runs).toEqual(['u1', 'u2']);
    expect(llm.calls).toHaveLength(3);
    const stored = store.readSession('mailer', 's')!.state.memory!.map((m) => m.content);
    expect(stored).toEqual(['first', 'done 1', 'second', 'done 2']);
    expect(store.listJournals('mailer', 's', { unfinished: true })).toEqual([]);
  });

  it('a commit whose outcome stayed unknown leaves its call to recovery, which finds the turn committed: never twice', async () => {
    const store = new MemoryStore();
    const runs: string[] = [];
    let lost = 4;
    // The store commits the turn and every answer is lost for a while (the first try and its three checks).
    const timingOut = new Proxy(store, {
      get(target, key) {
        if (key === 'synchronous') return false;
        const value = Reflect.get(target, key, target);
        if (typeof value !== 'function') return value;
        return async (...args: unknown[]) => {
          const result = (value as (...a: unknown[]) => unknown).apply(target, args);
          if (key === 'commitTurn' && lost-- > 0) throw new Error('Command timed out');
          return result;
        };
      },
    }) as unknown as SessionStore;
    const agent = new AsyncFunctionCallingAgent({
      llm: new AsyncMockLLM({ responses: answer }),
      actions: [asyncSendTool(runs)],
      durable: { store: timingOut },
      memory: { store: timingOut },
      name: 'mailer',
    });
    await expect(agent.call('first', { sessionId: 's' })).rejects.toThrow(
      /whether the turn was committed is unknown/,
    );
    expect(store.listJournals('mailer', 's', { unfinished: true })).toHaveLength(1);
    // The next message recovers the call: its turn is found committed, not written again.
    const recovered: unknown[] = [];
    agent.events.on('callRecovered', ({ message }) => recovered.push(message.content));
    expect((await agent.call('second', { sessionId: 's' })).content).toBe('done 2');
    expect(recovered).toEqual(['done 1']);
    const stored = store.readSession('mailer', 's')!;
    expect(stored.state.memory!.map((m) => m.content)).toEqual(['first', 'done 1', 'second', 'done 2']);
    expect(stored.version).toBe(2);
    expect(runs).toEqual(['u1', 'u2']);
  });

  it('a call left unfinished whose session had a turn since is not recovered over it: the newer turn stays', () => {
    const store = new MemoryStore();
    const runs: string[] = [];
    let dead = true;
    const agent = new FunctionCallingAgent({
      llm: new MockLLM({
        responses: (messages) => {
          const reply = answer(messages);
          if (reply.content !== undefined && dead) throw new Error('the process died');
          return reply;
        },
      }),
      actions: [sendTool(runs)],
      memory: { store },
      name: 'mailer',
    });
    // A durable call dies; a call that is not durable (no durable option) goes on with the session.
    expect(() => agent.call('first', { sessionId: 's', durable: { store: dyingStore(store) } })).toThrow(
      /the process died/,
    );
    dead = false;
    agent.call('plain', { sessionId: 's' });
    const plain = store.readSession('mailer', 's')!.state.memory!.map((m) => m.content);
    expect(plain).toEqual(['plain', 'done 1']);
    // The next durable call finds the dead one, and recovering it would take the session back: refused.
    expect(() => agent.call('third', { sessionId: 's', durable: { store } })).toThrow(StoreConflictError);
    expect(store.readSession('mailer', 's')!.state.memory!.map((m) => m.content)).toEqual(plain);
    // The dead call is failed now: the message again goes on.
    expect(agent.call('third', { sessionId: 's', durable: { store } }).content).toBe('done 2');
    expect(store.readSession('mailer', 's')!.state.memory!.map((m) => m.content)).toEqual([
      ...plain,
      'third',
      'done 2',
    ]);
  });

  it('a failed call keeps what it did: a retry with its callId does not run its tools again', () => {
    // The budget runs out after the Send ran (the model's second request): the call fails.
    const store = new MemoryStore();
    const runs: string[] = [];
    const llm = new MockLLM({ responses: answer });
    const agent = mailer(store, runs, llm);
    expect(() => agent.call('mail', { sessionId: 's', callId: 'c', budget: { modelCalls: 1 } })).toThrow(
      BudgetExceededError,
    );
    expect(runs).toEqual(['u1']);
    expect(agent.stateDict('s').memory).toEqual([]);
    expect(agent.recover({ sessionId: 's' })).toEqual([]);
    const reply = agent.call('mail', { sessionId: 's', callId: 'c', budget: { modelCalls: 2 } });
    expect(reply.content).toBe('done 1');
    expect(runs).toEqual(['u1']);
    expect(llm.calls).toHaveLength(2);
  });

  it('a failed call whose session moved on since is not retried: the retry is refused, newer turns stay', () => {
    const store = new MemoryStore();
    const runs: string[] = [];
    let failing = true;
    const agent = mailer(
      store,
      runs,
      new MockLLM({
        responses: (messages) => {
          const reply = answer(messages);
          if (reply.content !== undefined && failing) throw new Error('the model is down');
          return reply;
        },
      }),
    );
    expect(() => agent.call('first', { sessionId: 's', callId: 'c1' })).toThrow(/the model is down/);
    failing = false;
    agent.call('second', { sessionId: 's' });
    const after = contents(agent, 's');
    expect(() => agent.call('first', { sessionId: 's', callId: 'c1' })).toThrow(
      /has had another call since.*make a new call/,
    );
    expect(contents(agent, 's')).toBe(after);
    expect(runs).toEqual(['u1', 'u1']);
  });

  it('recover() of a call still running elsewhere waits for it, then is a no-op that says so: no model request, no turn', async () => {
    const store = new MemoryStore();
    const runs: string[] = [];
    let asked!: () => void;
    const running = new Promise<void>((resolve) => {
      asked = resolve;
    });
    const async = (llm: AsyncMockLLM) =>
      new AsyncFunctionCallingAgent({
        llm,
        actions: [asyncSendTool(runs)],
        durable: { store },
        memory: { store },
        name: 'mailer',
      });
    const original = async(
      new AsyncMockLLM({
        responses: (messages) => {
          asked();
          return answer(messages);
        },
        latencyMs: 30,
      }),
    );
    const call = original.call('mail', { sessionId: 's', callId: 'c' });
    await running;
    // Another process recovers the session while the call runs: it lists the call, waits for the lease.
    const llm = new AsyncMockLLM({ responses: answer });
    const replies = await async(llm).recover({ sessionId: 's' });
    expect((await call).content).toBe('done 1');
    expect(replies.map((reply) => [reply.content, reply.extraInfo])).toEqual([
      ['done 1', { callId: 'c', idempotentReplay: true }],
    ]);
    expect(llm.calls).toHaveLength(0);
    expect(runs).toEqual(['u1']);
    expect(store.readSession('mailer', 's')!.version).toBe(1);
  });

  it('two processes recovering the same crashed call: one replays it, the other gets its reply; one model request, one turn', async () => {
    const store = new MemoryStore();
    const runs: string[] = [];
    const async = (llm: AsyncMockLLM, on: SessionStore) =>
      new AsyncFunctionCallingAgent({
        llm,
        actions: [asyncSendTool(runs)],
        durable: { store: on },
        memory: { store: on },
        name: 'mailer',
      });
    let dead = true;
    const dying = async(
      new AsyncMockLLM({
        responses: (messages) => {
          const reply = answer(messages);
          if (reply.content !== undefined && dead) throw new Error('the process died');
          return reply;
        },
      }),
      dyingStore(store),
    );
    await expect(dying.call('mail', { sessionId: 's' })).rejects.toThrow(/the process died/);
    dead = false;
    const one = new AsyncMockLLM({ responses: answer, latencyMs: 20 });
    const two = new AsyncMockLLM({ responses: answer, latencyMs: 20 });
    const [a, b] = await Promise.all([
      async(one, store).recover({ sessionId: 's' }),
      async(two, store).recover({ sessionId: 's' }),
    ]);
    const replies = [...a, ...b];
    expect(replies.map((reply) => reply.content)).toEqual(['done 1', 'done 1']);
    expect(
      replies.filter((reply) => (reply.extraInfo as { idempotentReplay?: boolean }).idempotentReplay),
    ).toHaveLength(1);
    expect(one.calls.length + two.calls.length).toBe(1);
    expect(runs).toEqual(['u1']);
    expect(store.readSession('mailer', 's')!.version).toBe(1);
  });

  it('recover() and resume keep the call budget: the steps replayed count against it', () => {
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
    const dying = mailer(dyingStore(store), runs, llm);
    expect(() => dying.call('mail', { sessionId: 's', budget: { modelCalls: 1 } })).toThrow(
      /the process died|budget/,
    );
    dead = false;
    // The call had one model request and may not make another: its recovery is refused the second.
    const fresh = mailer(store, runs, new MockLLM({ responses: answer }));
    expect(() => fresh.recover({ sessionId: 's' })).toThrow(BudgetExceededError);
    expect(runs).toEqual(['u1']);
  });

  it('a resume keeps the budget its call was given: what the paused run spent counts', () => {
    const store = new MemoryStore();
    const runs: string[] = [];
    const llm = new MockLLM({ responses: answer });
    const agent = new FunctionCallingAgent({
      llm,
      actions: [sendTool(runs, true)],
      durable: { store },
      name: 'payer',
    });
    const paused = agent.call('pay', { sessionId: 's', budget: { modelCalls: 1 } });
    const [ask] = interruptsOf(paused);
    // The resume carries no budget: the call's own (one model request, spent) still holds.
    expect(() => agent.call(resumeWith([{ id: ask!.id, approve: true }]), { sessionId: 's' })).toThrow(
      BudgetExceededError,
    );
    expect(llm.calls).toHaveLength(1);
    expect(runs).toEqual(['u1']);
  });

  it('durable without memory: { store } holds a lease of its own: a call of another process on the session waits for it', async () => {
    const store = new MemoryStore();
    const runs: string[] = [];
    const asked: string[] = [];
    let release!: () => void;
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    const process1 = new AsyncFunctionCallingAgent({
      llm: new AsyncMockLLM({
        responses: (messages) => {
          asked.push('first');
          return answer(messages);
        },
      }),
      actions: [asyncSendTool(runs, () => held)],
      durable: { store },
      name: 'mailer',
    });
    const process2 = new AsyncFunctionCallingAgent({
      llm: new AsyncMockLLM({
        responses: (messages) => {
          asked.push('second');
          return answer(messages);
        },
      }),
      actions: [asyncSendTool(runs)],
      durable: { store },
      name: 'mailer',
    });
    const waited = new Promise<Error>((resolve) => process.once('warning', resolve));
    const first = process1.call('one', { sessionId: 's' });
    await vi.waitFor(() => expect(asked).toEqual(['first']));
    const second = process2.call('two', { sessionId: 's' });
    expect((await waited).message).toMatch(/session "s" of "mailer" is held by another call/);
    // The second process waits: it has not asked its model while the first call runs its Send.
    expect(asked).toEqual(['first']);
    release();
    await Promise.all([first, second]);
    expect(asked).toEqual(['first', 'first', 'second', 'second']);
    expect(runs).toEqual(['u1', 'u1']);
  });

  it('a holder whose lease another took records nothing more and never starts a tool the other ran', async () => {
    let now = 1_000_000;
    const store = new MemoryStore({ clock: () => now });
    const runs: string[] = [];
    let release!: () => void;
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    let entered!: () => void;
    const inTool = new Promise<void>((resolve) => {
      entered = resolve;
    });
    let gated = true;
    const gate = async () => {
      if (!gated) return;
      gated = false;
      entered();
      await held;
    };
    // The model asks for two Sends, one after the other.
    const twoSends = (messages: ChatMessage[]): MockReply => {
      const results = messages.filter((m) => m.role === 'tool').length;
      if (results < 2)
        return { toolCalls: [{ id: `t${results}`, name: 'Send', arguments: { to: `to-${results}` } }] };
      return { content: 'sent both' };
    };
    const agent = (llm: AsyncMockLLM) =>
      new AsyncFunctionCallingAgent({
        llm,
        actions: [asyncSendTool(runs, gate)],
        durable: { store, leaseMs: 60_000 },
        memory: { store, leaseMs: 60_000 },
        name: 'mailer',
      });
    const a = agent(new AsyncMockLLM({ responses: twoSends }));
    const stalled = a.call('send both', { sessionId: 's' });
    await inTool;
    // A stops inside its first Send past its lease (a pause): B takes the session over and finishes the call.
    now += 120_000;
    const b = agent(new AsyncMockLLM({ responses: twoSends }));
    const [recovered] = await b.recover({ sessionId: 's' });
    expect(recovered!.content).toBe('sent both');
    // B did not run A's first Send (its outcome is unknown), and ran the second.
    expect(runs).toEqual(['to-1']);
    release();
    await expect(stalled).rejects.toBeInstanceOf(StoreConflictError);
    // A finished its first Send, then could record nothing more: it never started the second one.
    expect(runs).toEqual(['to-1', 'to-0']);
    expect(store.readSession('mailer', 's')!.version).toBe(1);
  });
});
