import {
  type AgentMessage,
  AsyncFunctionCallingAgent,
  AsyncGPTAPI,
  AsyncStreamingFunctionCallingAgent,
  asyncTool,
  type Decision,
  type DurableOptions,
  FunctionCallingAgent,
  interruptsOf,
  MemoryStore,
  resumeWith,
  tool,
  ValidationError,
} from 'lagent-ts';
import { type FakeOpenAIServer, type FakeRequest, MockLLM, startFakeOpenAI } from 'lagent-ts/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';

/*
 * A decision approves the one call it answers. Approving DeleteFile('/home/u/old-notes.txt') never runs
 * DeleteFile('/home/u'), whatever ids the model server sends: none (the client numbers each reply's calls
 * from call_0), the same id every time, one id for two calls of a reply, and a decision sent again after a
 * later pause. Each through the real AsyncGPTAPI against the fake OpenAI server, with and without a durable
 * store.
 */

const NOTES = '/home/u/old-notes.txt';
const HOME = '/home/u';

function deleteFile(runs: string[]) {
  return asyncTool({
    name: 'DeleteFile',
    parameters: z.object({ path: z.string() }),
    needsApproval: true,
    run: async ({ path }) => {
      runs.push(path);
      return `deleted ${path}`;
    },
  });
}

/** How many tool results the model has seen in this request. */
const resultsIn = (request: FakeRequest) =>
  (request.body.messages as { role: string }[]).filter((m) => m.role === 'tool').length;

/** Deletes the notes, then (once that result is back) the whole home directory, then answers. */
function twoRounds(id: (round: number) => string | undefined) {
  return (request: FakeRequest) => {
    const seen = resultsIn(request);
    if (seen === 0) return { toolCalls: [{ id: id(0), name: 'DeleteFile', arguments: { path: NOTES } }] };
    if (seen === 1) return { toolCalls: [{ id: id(1), name: 'DeleteFile', arguments: { path: HOME } }] };
    return 'Done.';
  };
}

let server: FakeOpenAIServer;
beforeAll(async () => {
  server = await startFakeOpenAI();
});
afterAll(() => server.close());

const durableModes: [string, () => DurableOptions | undefined][] = [
  ['in memory', () => undefined],
  ['durable', () => ({ store: new MemoryStore() })],
];

function agentFor(runs: string[], durable: DurableOptions | undefined, streaming = false) {
  const llm = new AsyncGPTAPI({ model: 'm', baseURL: server.baseURL, apiKey: 'k' });
  const options = { llm, actions: [deleteFile(runs)], durable, name: 'janitor' };
  return streaming ? new AsyncStreamingFunctionCallingAgent(options) : new AsyncFunctionCallingAgent(options);
}

/** The agent's reply (a stream's last chunk). */
async function callOf(agent: ReturnType<typeof agentFor>, input: unknown, sessionId: string) {
  const result = agent.call(input as never, { sessionId });
  if (Symbol.asyncIterator in (result as object)) {
    let last: AgentMessage | undefined;
    for await (const chunk of result as AsyncIterable<AgentMessage>) last = chunk;
    return last!;
  }
  return (await result) as AgentMessage;
}

describe.each(durableModes)('a decision approves only the call it answers (%s)', (_mode, durable) => {
  for (const streaming of [false, true]) {
    const how = streaming ? 'streaming' : 'not streaming';
    it(`a server that sends no ids (${how}): the second DeleteFile waits for its own approval`, async () => {
      server.setScript(twoRounds(() => ''));
      const runs: string[] = [];
      const agent = agentFor(runs, durable(), streaming);
      const [first] = interruptsOf(await callOf(agent, 'Clean up', 's'));
      expect(first!.toolCall).toMatchObject({ name: 'DeleteFile', arguments: { path: NOTES } });
      const next = await callOf(agent, resumeWith([{ id: first!.id, approve: true }]), 's');
      expect(runs).toEqual([NOTES]);
      const [second] = interruptsOf(next);
      expect(second!.toolCall).toMatchObject({ name: 'DeleteFile', arguments: { path: HOME } });
      expect(second!.id).not.toBe(first!.id);
      const done = await callOf(agent, resumeWith([{ id: second!.id, approve: false, reason: 'no' }]), 's');
      expect(done.content).toBe('Done.');
      expect(runs).toEqual([NOTES]);
    });
  }

  it('a server that repeats one id: the second DeleteFile waits for its own approval', async () => {
    server.setScript(twoRounds(() => 'call_same'));
    const runs: string[] = [];
    const agent = agentFor(runs, durable());
    const [first] = interruptsOf(await callOf(agent, 'Clean up', 's'));
    const next = await callOf(agent, resumeWith([{ id: first!.id, approve: true }]), 's');
    expect(runs).toEqual([NOTES]);
    const asks = interruptsOf(next);
    expect(asks.map((ask) => ask.toolCall.arguments)).toEqual([{ path: HOME }]);
    expect(asks[0]!.id).not.toBe(first!.id);
  });

  it('two calls of one reply under one id: each is asked about on its own', async () => {
    server.setScript((request) =>
      resultsIn(request) === 0
        ? {
            toolCalls: [
              { id: 'dup', name: 'DeleteFile', arguments: { path: NOTES } },
              { id: 'dup', name: 'DeleteFile', arguments: { path: HOME } },
            ],
          }
        : 'Done.',
    );
    const runs: string[] = [];
    const agent = agentFor(runs, durable());
    const asks = interruptsOf(await callOf(agent, 'Clean up', 's'));
    expect(asks.map((ask) => ask.toolCall.arguments)).toEqual([{ path: NOTES }, { path: HOME }]);
    expect(new Set(asks.map((ask) => ask.id)).size).toBe(2);
    const notes = asks.find((ask) => (ask.toolCall.arguments as { path: string }).path === NOTES)!;
    const still = await callOf(agent, resumeWith([{ id: notes.id, approve: true }]), 's');
    expect(runs).toEqual([]);
    expect(interruptsOf(still).map((ask) => ask.toolCall.arguments)).toEqual([{ path: HOME }]);
  });

  it('a decision sent again after a later pause is refused, naming the call that waits', async () => {
    server.setScript(twoRounds(() => ''));
    const runs: string[] = [];
    const agent = agentFor(runs, durable());
    const [first] = interruptsOf(await callOf(agent, 'Clean up', 's'));
    const approval = resumeWith([{ id: first!.id, approve: true }]);
    const [second] = interruptsOf(await callOf(agent, approval, 's'));
    expect(runs).toEqual([NOTES]);
    const error = await callOf(agent, resumeWith([{ id: first!.id, approve: true }]), 's').catch((e) => e);
    expect(error).toBeInstanceOf(ValidationError);
    expect(String(error.message)).toContain(second!.id);
    expect(runs).toEqual([NOTES]);
    // Nothing was lost: the waiting call is still there for its own decision.
    const done = await callOf(agent, resumeWith([{ id: second!.id, approve: false }]), 's');
    expect(done.content).toBe('Done.');
    expect(runs).toEqual([NOTES]);
  });
});

describe('decisions are checked', () => {
  function scripted(runs: string[]) {
    const remove = tool({
      name: 'Delete',
      parameters: z.object({ path: z.string() }),
      needsApproval: true,
      run: ({ path }) => {
        runs.push(path);
        return `deleted ${path}`;
      },
    });
    return new FunctionCallingAgent({
      llm: new MockLLM({
        responses: [
          {
            toolCalls: [
              { name: 'Delete', arguments: { path: '/1' } },
              { name: 'Delete', arguments: { path: '/2' } },
            ],
          },
          'Done.',
        ],
      }),
      actions: [remove],
    });
  }

  it('a decision for an id nothing waits for is a ValidationError naming the ids that wait; nothing runs', () => {
    const runs: string[] = [];
    const agent = scripted(runs);
    const asks = interruptsOf(agent.call('Clean up'));
    const call = () =>
      agent.call(
        resumeWith([
          { id: asks[0]!.id, approve: true },
          { id: 'call_typo', approve: true },
        ]),
      );
    expect(call).toThrow(ValidationError);
    expect(call).toThrow(/call_typo.*call_1.*call_2|call_typo[\s\S]*waits?[\s\S]*call_1, call_2/);
    expect(runs).toEqual([]);
    // The session still waits for both.
    expect(agent.call(resumeWith(asks.map((ask): Decision => ({ id: ask.id, approve: true })))).content).toBe(
      'Done.',
    );
    expect(runs).toEqual(['/1', '/2']);
  });

  it('two decisions for one id are a ValidationError, not "the last wins"', () => {
    const runs: string[] = [];
    const agent = scripted(runs);
    const [ask] = interruptsOf(agent.call('Clean up'));
    const twice = [
      { id: ask!.id, approve: false, reason: 'no' },
      { id: ask!.id, approve: true },
    ] as Decision[];
    expect(() => resumeWith(twice)).toThrow(ValidationError);
    // A resume message written by hand is checked the same way.
    const message = { sender: 'user', type: 'resume', content: '', formatted: { decisions: twice } };
    expect(() => agent.call(message as never)).toThrow(ValidationError);
    expect(runs).toEqual([]);
  });
});

describe('copies of a saved session, each resumed with the same approval', () => {
  function mailer(runs: string[], store: MemoryStore) {
    const send = tool({
      name: 'Send',
      parameters: z.object({ to: z.string() }),
      needsApproval: true,
      run: ({ to }) => {
        runs.push(to);
        return `sent to ${to}`;
      },
    });
    const llm = new MockLLM({
      responses: (messages) =>
        messages.at(-1)?.role === 'tool'
          ? 'Sent.'
          : { toolCalls: [{ name: 'Send', arguments: { to: 'bob' } }] },
    });
    return new FunctionCallingAgent({ llm, actions: [send], durable: { store }, name: 'mailer' });
  }

  it('with a durable store, the second approval of the same pause is refused: the tool runs once', () => {
    const store = new MemoryStore();
    const runs: string[] = [];
    const original = mailer(runs, store);
    const [ask] = interruptsOf(original.call('Mail bob', { sessionId: 's' }));
    const saved = JSON.parse(JSON.stringify(original.stateDict('s')));
    const copies = [mailer(runs, store), mailer(runs, store)];
    for (const copy of copies) copy.loadStateDict(saved, 's');
    const approve = resumeWith([{ id: ask!.id, approve: true }]);
    expect(copies[0]!.call(approve, { sessionId: 's' }).content).toBe('Sent.');
    expect(() => copies[1]!.call(approve, { sessionId: 's' })).toThrow(ValidationError);
    expect(() => copies[1]!.call(approve, { sessionId: 's' })).toThrow(/no call of session "s" waits/);
    expect(runs).toEqual(['bob']);
  });
});
