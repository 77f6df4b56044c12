import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ChatMessage } from 'lagent-ts';
import {
  ActionExecutor,
  Agent,
  AsyncFunctionCallingAgent,
  AsyncStreamingFunctionCallingAgent,
  asyncTool,
  type BaseAction,
  BudgetExceededError,
  ConfigurationError,
  FunctionCallingAgent,
  MemoryStore,
  tool,
  ValidationError,
} from 'lagent-ts';
import { SQLiteStore } from 'lagent-ts/stores';
import { AsyncMockLLM, MockLLM, type MockReply } from 'lagent-ts/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { dyingStore } from '../helpers/durable';

/*
 * Working memory: the model keeps a record through the updateWorkingMemory tool and sees it in its system
 * prompt; bad updates go back to the model, failed calls take updates back, sessions and resources keep their
 * own records, stores persist them and durable replays apply them once (the stores' own engines, and other
 * processes: test/stores/working-memory.test.ts).
 */

const system = (messages: ChatMessage[]) => messages.find((m) => m.role === 'system')?.content ?? '';
const update = (memory: unknown, id = 'wm'): MockReply => ({
  toolCalls: [{ id, name: 'updateWorkingMemory', arguments: { memory } }],
});
const lastToolResult = (messages: ChatMessage[]) => messages.filter((m) => m.role === 'tool').at(-1)?.content;

const noop = tool({ name: 'Noop', parameters: z.object({}), run: () => 'ok' });

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

describe('working memory (session scope)', () => {
  it('an update through the tool is in the system prompt of the next model call, and reported as an event', () => {
    const llm = new MockLLM({ responses: [update('Name: Ada.'), 'Noted.', 'Hello Ada.'] });
    const agent = new FunctionCallingAgent({
      llm,
      actions: [noop],
      template: 'You are helpful.',
      workingMemory: { scope: 'session' },
    });
    const events: unknown[] = [];
    agent.events.on('workingMemory', (event) => events.push([event.sessionId, event.scope, event.value]));
    agent.call('I am Ada', { sessionId: 's' });
    expect(system(llm.calls[0]!.messages)).toContain('It is empty.');
    expect(system(llm.calls[0]!.messages)).toMatch(/^You are helpful\.\n\n## Working memory/);
    expect(llm.calls[0]!.tools!.map((t) => t.function.name)).toContain('updateWorkingMemory');
    expect(system(llm.calls[1]!.messages)).toContain('<working_memory>\nName: Ada.\n</working_memory>');
    agent.call('hi again', { sessionId: 's' });
    expect(system(llm.calls[2]!.messages)).toContain('Name: Ada.');
    expect(events).toEqual([['s', 'session', 'Name: Ada.']]);
    // Another session has its own (empty) record.
    const other = new MockLLM({ responses: ['hi'] });
    agent.agent.llm = other;
    agent.call('hello', { sessionId: 't' });
    expect(system(other.calls[0]!.messages)).toContain('It is empty.');
  });

  it('with an object schema, updates merge; an update the schema refuses goes back to the model and loses nothing', async () => {
    const schema = z.object({
      name: z.string(),
      city: z.string().optional(),
      age: z.number().int().optional(),
    });
    const llm = new AsyncMockLLM({
      responses: [
        update({ name: 'Ada' }, 'a'),
        update({ city: 'London' }, 'b'),
        update({ age: 'old' }, 'c'),
        update({ name: null }, 'd'),
        'done',
      ],
    });
    const agent = new AsyncFunctionCallingAgent({
      llm,
      actions: [noop],
      workingMemory: { scope: 'session', schema },
    });
    await agent.call('go', { sessionId: 1 });
    const shown = system(llm.calls[2]!.messages);
    expect(shown).toContain('{"name":"Ada","city":"London"}');
    expect(shown).toContain('"properties"');
    // The argument check (a string for a number) and the whole record's check (a required name cleared) both
    // reach the model.
    expect(lastToolResult(llm.calls[3]!.messages)).toMatch(/age/);
    expect(lastToolResult(llm.calls[4]!.messages)).toMatch(/not updated.*name/s);
    expect(system(llm.calls[4]!.messages)).toContain('{"name":"Ada","city":"London"}');
    expect(agent.stateDict(1).workingMemory).toEqual([
      expect.objectContaining({ content: '{"name":"Ada","city":"London"}' }),
    ]);
  });

  it('a call that fails after the update takes it back (sync: the model fails; async: a later tool throws the call)', async () => {
    const failing = new MockLLM({
      responses: (_messages, _params, index) => {
        if (index === 0) return update('secret plan');
        throw new Error('model down');
      },
    });
    const agent = new FunctionCallingAgent({
      llm: failing,
      actions: [noop],
      workingMemory: { scope: 'session' },
    });
    expect(() => agent.call('go', { sessionId: 's' })).toThrow('model down');
    expect(agent.stateDict('s').workingMemory).toEqual([]);

    const llm = new AsyncMockLLM({ responses: [update('kept'), 'ok', update('dropped'), 'never'] });
    const controller = new AbortController();
    const stopper = asyncTool({
      name: 'Stop',
      parameters: z.object({}),
      run: () => {
        controller.abort(new Error('stopped'));
        return 'stopping';
      },
    });
    const second = new AsyncFunctionCallingAgent({
      llm,
      actions: [stopper],
      workingMemory: { scope: 'session' },
    });
    await second.call('one', { sessionId: 's' });
    llm.calls.length = 0;
    const stopping = new AsyncMockLLM({
      responses: [
        {
          toolCalls: [
            { id: 'u', name: 'updateWorkingMemory', arguments: { memory: 'dropped' } },
            { id: 'x', name: 'Stop', arguments: {} },
          ],
        },
        'never',
      ],
    });
    second.agent.llm = stopping;
    await expect(second.call('two', { sessionId: 's', signal: controller.signal })).rejects.toThrow();
    expect(second.stateDict('s').workingMemory).toEqual([expect.objectContaining({ content: 'kept' })]);
  });

  it('an update is a tool call like any other: a budget counts it, and refuses it past its limit', () => {
    const agent = new FunctionCallingAgent({
      llm: new MockLLM({ responses: [update('x'), 'ok', update('y')] }),
      actions: [noop],
      workingMemory: { scope: 'session' },
    });
    const reply = agent.call('go', { sessionId: 'b', budget: { toolCalls: 1 } });
    expect((reply.extraInfo as { usage: { toolCalls: number } }).usage.toolCalls).toBe(1);
    expect(() => agent.call('again', { sessionId: 'c', budget: { toolCalls: 0 } })).toThrow(
      BudgetExceededError,
    );
    expect(agent.stateDict('c').workingMemory).toEqual([]);
  });

  it('stateDict carries the record; loadStateDict restores it; an older state dict without one loads empty', () => {
    const make = (responses: (string | MockReply)[]) =>
      new FunctionCallingAgent({
        llm: new MockLLM({ responses }),
        actions: [noop],
        workingMemory: { scope: 'session' },
      });
    const agent = make([update('likes tea'), 'ok']);
    agent.call('tea please', { sessionId: 'a' });
    const dict = agent.stateDict('a');
    expect(dict.workingMemory).toEqual([
      expect.objectContaining({ content: 'likes tea', sender: 'workingMemory' }),
    ]);
    expect(agent.stateDict('a', { format: 'lagent' }).working_memory).toHaveLength(1);
    const copy = make(['hello']);
    copy.loadStateDict(dict, 'b');
    copy.call('hi', { sessionId: 'b' });
    expect(system((copy.agent.llm as MockLLM).calls[0]!.messages)).toContain('likes tea');
    const { workingMemory: _dropped, ...older } = dict;
    copy.loadStateDict(older, 'b');
    expect(copy.stateDict('b').workingMemory).toEqual([]);
    copy.reset('a');
  });

  it('a streaming function-calling agent shows the record to its streamed model calls', async () => {
    const llm = new AsyncMockLLM({ responses: [update('prefers French'), 'Noted.', 'Bonjour.'] });
    const agent = new AsyncStreamingFunctionCallingAgent({
      llm,
      actions: [noop],
      workingMemory: { scope: 'session' },
    });
    for await (const _chunk of agent.call('I prefer French', { sessionId: 'f' })) {
      // drained
    }
    for await (const _chunk of agent.call('hello', { sessionId: 'f' })) {
      // drained
    }
    expect(system(llm.calls[2]!.messages)).toContain('<working_memory>\nprefers French\n</working_memory>');
  });

  it('an Agent given tools returns the call; an executor over agent.tools runs it, inside a call that keeps it', () => {
    const agent = new Agent({
      llm: new MockLLM({ responses: [update('likes jazz'), 'ok'] }),
      tools: [noop],
      workingMemory: { scope: 'session' },
    });
    const reply = agent.call('I like jazz', { sessionId: 'j' });
    const executor = new ActionExecutor({ actions: agent.tools as BaseAction[] });
    const results = executor.call(reply, { sessionId: 'j' });
    expect(String(results.content)).not.toMatch(/error/i);
    agent.call(results as never, { sessionId: 'j' });
    expect(system((agent.llm as MockLLM).calls[1]!.messages)).toContain('likes jazz');
  });

  it('an agent given tools offers the tool; one without tools (no native tool calls) is refused', () => {
    expect(
      () => new Agent({ llm: new MockLLM({ responses: [] }), workingMemory: { scope: 'session' } }),
    ).toThrow(ConfigurationError);
    expect(
      () =>
        new FunctionCallingAgent({
          llm: new MockLLM({ responses: [] }),
          actions: [noop],
          workingMemory: { scope: 'user' as never },
        }),
    ).toThrow(/scope must be/);
    const agent = new Agent({
      llm: new MockLLM({ responses: [update('x')] }),
      tools: [noop],
      workingMemory: { scope: 'session' },
    });
    const reply = agent.call('hi');
    expect((reply.formatted as { toolCalls: { name: string }[] }).toolCalls[0]!.name).toBe(
      'updateWorkingMemory',
    );
    expect(agent.tools!.length).toBe(2);
  });

  it('a durable call recovered by another process keeps the update it journaled once, without running the tool again', () => {
    const store = new MemoryStore();
    const script = (dead: () => boolean) =>
      new MockLLM({
        responses: (messages) => {
          const last = messages.at(-1)!;
          if (last.role === 'user' && last.content === 'first') return update('x');
          if (last.role === 'tool' && dead()) throw new Error('the process died');
          return 'ok';
        },
      });
    const make = (llm: MockLLM, dying: boolean) =>
      new FunctionCallingAgent({
        llm,
        actions: [noop],
        durable: { store: dying ? dyingStore(store) : store },
        memory: { store: dying ? dyingStore(store) : store },
        workingMemory: { scope: 'session' },
        name: 'bot',
      });
    const dying = make(
      script(() => true),
      true,
    );
    const first: unknown[] = [];
    dying.events.on('workingMemory', (event) => first.push(event.value));
    expect(() => dying.call('first', { sessionId: 's' })).toThrow(/the process died/);
    expect(first).toEqual(['x']);
    expect(dying.stateDict('s').workingMemory).toEqual([]);
    // Another process: the next message recovers the call first; the update comes back from its journal.
    const llm = script(() => false);
    const next = make(llm, false);
    const events: unknown[] = [];
    next.events.on('workingMemory', (event) => events.push(event.value));
    next.call('second', { sessionId: 's' });
    expect(events).toEqual(['x']);
    expect(next.stateDict('s').workingMemory).toEqual([expect.objectContaining({ content: 'x' })]);
    expect(system(llm.calls.at(-1)!.messages)).toContain('<working_memory>\nx\n</working_memory>');
    expect(store.readSession('bot', 's')!.state.working_memory).toEqual([
      expect.objectContaining({ content: 'x' }),
    ]);
  });
});

describe('working memory: deleting a session', () => {
  it.each(['in process', 'SQLite store'])(
    'agent.deleteSession removes its session-scope record (%s)',
    async (where) => {
      const dir = mkdtempSync(join(tmpdir(), 'lagent-wm-delete-'));
      dirs.push(dir);
      const store = where === 'in process' ? undefined : new SQLiteStore({ path: join(dir, 's.db') });
      const llm = new MockLLM({ responses: [update('Name: Ada.'), 'Noted.', 'Hello.', 'Hello.'] });
      const agent = new FunctionCallingAgent({
        llm,
        actions: [noop],
        workingMemory: { scope: 'session' },
        name: 'bot',
        ...(store ? { memory: { store } } : {}),
      });
      agent.call('I am Ada', { sessionId: 's' });
      agent.call('hi', { sessionId: 's' });
      expect(system(llm.calls[2]!.messages)).toContain('Name: Ada.');
      expect(await agent.deleteSession('s')).toBe(true);
      expect(store?.readSession('bot', 's')).toBeUndefined();
      agent.call('hi again', { sessionId: 's' });
      expect(system(llm.calls[3]!.messages)).toContain('It is empty.');
      store?.close();
    },
  );
});

describe('working memory (resource scope)', () => {
  it('is shared by the sessions of one resourceId and invisible to another; a call without resourceId is refused', async () => {
    const llm = new AsyncMockLLM({
      responses: (messages) => {
        const user = messages.filter((m) => m.role === 'user').at(-1)!.content!;
        if (user.startsWith('remember ') && messages.at(-1)!.role === 'user') return update(user.slice(9));
        return 'ok';
      },
    });
    const store = new MemoryStore();
    const agent = new AsyncFunctionCallingAgent({
      llm,
      actions: [noop],
      memory: { store },
      workingMemory: { scope: 'resource' },
      name: 'bot',
    });
    await agent.call('remember vegetarian', { sessionId: 's1', resourceId: 'ada' });
    await agent.call('what do I eat?', { sessionId: 's2', resourceId: 'ada' });
    expect(system(llm.calls.at(-1)!.messages)).toContain('vegetarian');
    expect(system(llm.calls.at(-1)!.messages)).toContain('across all of your conversations');
    await agent.call('what do I eat?', { sessionId: 's3', resourceId: 'bob' });
    expect(system(llm.calls.at(-1)!.messages)).toContain('It is empty.');
    await expect(agent.call('hi', { sessionId: 's4' })).rejects.toThrow(ValidationError);
    // Kept in the store under a namespace of its own: no session of the agent's is named by the resource.
    expect(await store.readSession('bot', 'ada')).toBeUndefined();
    expect((await store.readSession('bot/working-memory', 'ada'))?.state.working_memory?.[0]?.content).toBe(
      'vegetarian',
    );
  });

  it('two sessions of one resource updating at once: the second is told the record changed, and updates again', async () => {
    let open!: () => void;
    const gate = new Promise<void>((resolve) => {
      open = resolve;
    });
    let waiting = 0;
    const llm = new AsyncMockLLM({
      responses: (messages) => {
        const user = messages.findLast((m) => m.role === 'user')!.content!;
        const last = messages.at(-1)!;
        if (last.role === 'user') return { toolCalls: [{ id: 'w', name: 'Wait', arguments: {} }] };
        if (last.role === 'tool' && String(last.content).startsWith('waited')) return update(user, 'u1');
        if (last.role === 'tool' && String(last.content).includes('changed in another conversation')) {
          const now = /It now reads:\n(.*)\n/.exec(String(last.content))![1]!;
          return update(`${now}; ${user}`, 'u2');
        }
        return 'ok';
      },
    });
    const wait = asyncTool({
      name: 'Wait',
      parameters: z.object({}),
      run: async () => {
        // Both sessions' models have been shown the empty record before either updates it.
        if (++waiting === 2) open();
        await gate;
        return 'waited';
      },
    });
    const agent = new AsyncFunctionCallingAgent({
      llm,
      actions: [wait],
      workingMemory: { scope: 'resource' },
    });
    const values: unknown[] = [];
    agent.events.on('workingMemory', (event) => values.push(event.value));
    await Promise.all([
      agent.call('likes tea', { sessionId: 'a', resourceId: 'ada' }),
      agent.call('lives in Rome', { sessionId: 'b', resourceId: 'ada' }),
    ]);
    expect(values).toHaveLength(2);
    const final = String(values[1]);
    expect(final).toContain('likes tea');
    expect(final).toContain('lives in Rome');
  });

  it('a failed call takes a resource update back (SQLite store, sync agent)', () => {
    const dir = mkdtempSync(join(tmpdir(), 'wm-'));
    dirs.push(dir);
    const store = new SQLiteStore({ path: join(dir, 's.db') });
    const llm = new MockLLM({
      responses: (_messages, _params, index) => {
        if (index === 0) return update('first');
        if (index === 1) return 'ok';
        if (index === 2) return update('second');
        throw new Error('model down');
      },
    });
    const agent = new FunctionCallingAgent({
      llm,
      actions: [noop],
      memory: { store },
      workingMemory: { scope: 'resource' },
      name: 'bot',
    });
    agent.call('a', { sessionId: 's', resourceId: 'ada' });
    expect(() => agent.call('b', { sessionId: 's', resourceId: 'ada' })).toThrow('model down');
    expect(store.readSession('bot/working-memory', 'ada')?.state.working_memory?.[0]?.content).toBe('first');
    store.close();
  });
});
