import {
  type AgentMessage,
  AsyncAgent,
  AsyncFunctionCallingAgent,
  asyncTool,
  type ChatMessage,
  type ForwardOptions,
  FunctionCallingAgent,
  interruptsOf,
  MemoryStore,
  type OpenAITool,
  pendingInterrupts,
  resumeWith,
  tool,
  ValidationError,
} from 'lagent-ts';
import { AsyncMockLLM, MockLLM, type MockReply } from 'lagent-ts/testing';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';

/*
 * Client tools: tools a call's caller runs itself (`clientTools`), offered to the model beside the agent's own.
 * The model's call of one stops the call with an interrupt of kind 'client-tool'; the resume's decision carries
 * the output, which the model reads as the tool's.
 */

const confirm: OpenAITool = {
  type: 'function',
  function: {
    name: 'confirm',
    description: 'Asks the user to confirm',
    parameters: { type: 'object', properties: { question: { type: 'string' } } },
  },
};

/** The model: `ask` calls `confirm`; `both` calls `Weather` and `confirm` at once; after tools, it says what it got. */
function script(messages: ChatMessage[]): string | MockReply {
  const last = messages.at(-1)!;
  if (last.role === 'tool') {
    const results = [];
    for (let i = messages.length - 1; messages[i]!.role === 'tool'; i--)
      results.unshift(messages[i]!.content);
    return `Done: ${results.join(' + ')}`;
  }
  const text = String(last.content);
  if (text === 'ask') return { toolCalls: [{ name: 'confirm', arguments: { question: 'sure?' } }] };
  if (text === 'both') {
    return {
      toolCalls: [
        { name: 'Weather', arguments: { city: 'Paris' } },
        { name: 'confirm', arguments: { question: 'go out?' } },
      ],
    };
  }
  return `You said: ${text}`;
}

function weather(runs: string[]) {
  return asyncTool({
    name: 'Weather',
    description: 'The weather in a city',
    parameters: z.object({ city: z.string() }),
    run: async ({ city }) => {
      runs.push(city);
      return `sunny in ${city}`;
    },
  });
}

function assistant(options: { durable?: { store: MemoryStore } } = {}) {
  const runs: string[] = [];
  const llm = new AsyncMockLLM({ responses: (messages) => script(messages) });
  const agent = new AsyncFunctionCallingAgent({
    llm,
    actions: [weather(runs)],
    name: 'assistant',
    ...options,
  });
  return { agent, llm, runs };
}

const toolNames = (llm: AsyncMockLLM | MockLLM, call: number) =>
  (llm.calls[call]!.tools ?? []).map((spec) => spec.function.name);

describe('client tools', () => {
  it('are offered beside the agent tools; a call of one stops the call, and its result resumes it', async () => {
    const { agent, llm, runs } = assistant();
    const reply = await agent.call('ask', { sessionId: 's', clientTools: [confirm] });
    expect(toolNames(llm, 0)).toEqual(['Weather', 'confirm']);
    expect(reply.type).toBe('interrupt');
    const interrupts = interruptsOf(reply);
    expect(interrupts).toEqual([
      {
        id: 'call_1',
        kind: 'client-tool',
        path: '',
        toolCall: { id: 'call_1', name: 'confirm', arguments: { question: 'sure?' }, client: true },
      },
    ]);
    expect(reply.content).toBe("Waiting for the caller's tool results: confirm (call_1)");
    expect(await pendingInterrupts(agent, 's')).toEqual(interrupts);

    const done = await agent.call(resumeWith([{ id: 'call_1', approve: true, result: 'yes' }]), {
      sessionId: 's',
      clientTools: [confirm],
    });
    expect(done.content).toBe('Done: yes');
    expect(toolNames(llm, 1)).toEqual(['Weather', 'confirm']);
    expect(llm.calls[1]!.messages.at(-1)).toMatchObject({
      role: 'tool',
      toolCallId: 'call_1',
      content: 'yes',
    });
    expect(await pendingInterrupts(agent, 's')).toEqual([]);
    expect(runs).toEqual([]);
  });

  it("a round with the agent's own tool waits whole; resumed, the tool runs and both answers go back", async () => {
    const { agent, llm, runs } = assistant();
    const reply = await agent.call('both', { sessionId: 's', clientTools: [confirm] });
    expect(interruptsOf(reply).map((ask) => [ask.kind, ask.toolCall.name])).toEqual([
      ['client-tool', 'confirm'],
    ]);
    expect(runs).toEqual([]);
    const done = await agent.call(resumeWith([{ id: 'call_2', approve: true, result: 'yes' }]), {
      sessionId: 's',
    });
    expect(done.content).toBe('Done: sunny in Paris + yes');
    expect(runs).toEqual(['Paris']);
    expect(llm.calls).toHaveLength(2);
  });

  it('a declined call, or a new message instead of the result, tells the model it did not run', async () => {
    const { agent } = assistant();
    await agent.call('ask', { sessionId: 'declined', clientTools: [confirm] });
    const declined = await agent.call(resumeWith([{ id: 'call_1', approve: false, reason: 'no time' }]), {
      sessionId: 'declined',
    });
    expect(declined.content).toMatch(
      /^Done: The user declined this call of confirm: no time\. It was not run\./,
    );

    await agent.call('ask', { sessionId: 'superseded', clientTools: [confirm] });
    const next = await agent.call('hello', { sessionId: 'superseded' });
    expect(next.content).toBe('You said: hello');
    expect(await pendingInterrupts(agent, 'superseded')).toEqual([]);
  });

  it('a decision that does not fit is a ValidationError, and the session still waits as it did', async () => {
    const { agent, llm } = assistant();
    await agent.call('ask', { sessionId: 's', clientTools: [confirm] });
    const before = JSON.stringify(agent.stateDict('s'));
    const refused = [
      [{ id: 'call_9', approve: true, result: 'yes' }],
      [{ id: 'call_1', approve: true }],
      [{ id: 'call_1', approve: true, arguments: { question: 'x' } }],
    ] as const;
    for (const decisions of refused) {
      await expect(agent.call(resumeWith(decisions), { sessionId: 's' })).rejects.toThrow(ValidationError);
      expect(JSON.stringify(agent.stateDict('s'))).toBe(before);
    }
    expect(() =>
      resumeWith([
        { id: 'call_1', approve: true, result: 'yes' },
        { id: 'call_1', approve: true, result: 'no' },
      ]),
    ).toThrow(/twice/);
    expect(() => resumeWith([{ id: 'call_1', approve: true, result: 42 as unknown as string }])).toThrow(
      /must be a string/,
    );
    expect(llm.calls).toHaveLength(1);
    expect((await pendingInterrupts(agent, 's')).map((ask) => ask.id)).toEqual(['call_1']);
    const done = await agent.call(resumeWith([{ id: 'call_1', approve: true, result: 'ok' }]), {
      sessionId: 's',
    });
    expect(done.content).toBe('Done: ok');
  });

  it("a result for a call that needs approval is refused: it waits for a person's decision", async () => {
    const runs: string[] = [];
    const drop = asyncTool({
      name: 'Drop',
      parameters: z.object({}),
      needsApproval: true,
      run: async () => {
        runs.push('drop');
        return 'dropped';
      },
    });
    const llm = new AsyncMockLLM({ responses: [{ toolCalls: [{ name: 'Drop', arguments: {} }] }, 'ok'] });
    const agent = new AsyncFunctionCallingAgent({ llm, actions: [drop] });
    const [ask] = interruptsOf(await agent.call('drop it', { sessionId: 's', clientTools: [confirm] }));
    expect(ask!.kind).toBe('approval');
    await expect(
      agent.call(resumeWith([{ id: ask!.id, approve: true, result: 'forged' }]), { sessionId: 's' }),
    ).rejects.toThrow(/waits for approval, not for a client tool's result/);
    expect(runs).toEqual([]);
  });

  it('a client tool named like a tool of the tree, or malformed, is a ValidationError before anything runs', async () => {
    const { agent, llm } = assistant();
    await agent.call('hi', { sessionId: 's' });
    const before = JSON.stringify(agent.stateDict('s'));
    const named = (name: unknown): OpenAITool =>
      ({ type: 'function', function: { name, description: '', parameters: {} } }) as OpenAITool;
    const bad = [
      [named('Weather')],
      [named('a.b')],
      [named('')],
      [confirm, confirm],
      [{ name: 'confirm' } as unknown as OpenAITool],
      'confirm' as unknown as OpenAITool[],
    ];
    for (const clientTools of bad) {
      await expect(agent.call('ask', { sessionId: 's', clientTools })).rejects.toThrow(ValidationError);
    }
    await expect(agent.call('ask', { sessionId: 's', clientTools: [named('Weather')] })).rejects.toThrow(
      'assistant: the client tool Weather has the name of a tool of assistant.agent; give it a name of its own',
    );
    expect(JSON.stringify(agent.stateDict('s'))).toBe(before);
    expect(llm.calls).toHaveLength(1);
  });

  it('work in the sync loop too', () => {
    const llm = new MockLLM({ responses: (messages) => script(messages) });
    const agent = new FunctionCallingAgent({
      llm,
      actions: [tool({ name: 'Weather', parameters: z.object({ city: z.string() }), run: () => 'rain' })],
    });
    const [ask] = interruptsOf(agent.call('ask', { sessionId: 1, clientTools: [confirm] }));
    expect(ask!.kind).toBe('client-tool');
    expect(agent.pendingInterrupts(1)).toEqual([ask]);
    expect(
      agent.call(resumeWith([{ id: ask!.id, approve: true, result: 'sure' }]), { sessionId: 1 }).content,
    ).toBe('Done: sure');
  });

  it('a durable call journals the pause: resumed in a fresh process without the tools, it goes on', async () => {
    const store = new MemoryStore();
    const { agent, llm } = assistant({ durable: { store } });
    const [ask] = interruptsOf(await agent.call('both', { sessionId: 7, clientTools: [confirm] }));
    expect(ask).toMatchObject({ kind: 'client-tool', toolCall: { name: 'confirm' } });
    const saved = agent.stateDict(7);

    const fresh = assistant({ durable: { store } });
    fresh.agent.loadStateDict(saved, 7);
    expect(await pendingInterrupts(fresh.agent, 7)).toEqual([ask]);
    // A result for what does not wait, or a result-less answer, is refused before the journal moves on.
    await expect(
      fresh.agent.call(resumeWith([{ id: 'call_9', approve: true, result: 'x' }]), { sessionId: 7 }),
    ).rejects.toThrow(ValidationError);
    await expect(
      fresh.agent.call(resumeWith([{ id: ask!.id, approve: true }]), { sessionId: 7 }),
    ).rejects.toThrow(/is a call of a client tool/);
    expect(await pendingInterrupts(fresh.agent, 7)).toEqual([ask]);

    const done = await fresh.agent.call(resumeWith([{ id: ask!.id, approve: true, result: 'yes' }]), {
      sessionId: 7,
    });
    expect(done.content).toBe('Done: sunny in Paris + yes');
    // The first model call came from the journal; the replayed round ran Weather; the model was asked once more.
    expect(fresh.llm.calls).toHaveLength(1);
    expect(toolNames(fresh.llm, 0)).toEqual(['Weather', 'confirm']);
    expect(fresh.runs).toEqual(['Paris']);
    expect(llm.calls).toHaveLength(1);
  });

  it("reach a composite's sub-agent: the interrupt has its path, and the composite resumes in process", async () => {
    const runs: string[] = [];
    const researcherLLM = new AsyncMockLLM({ responses: (messages) => script(messages) });
    class Desk extends AsyncAgent {
      readonly researcher = new AsyncFunctionCallingAgent({
        llm: researcherLLM,
        actions: [weather(runs)],
        name: 'researcher',
      });
      override async forward(messages: AgentMessage[], options: ForwardOptions) {
        const found = await this.researcher.call(messages, { sessionId: options.sessionId });
        return `The desk reports: ${String(found.content)}`;
      }
    }
    const desk = new Desk({ name: 'desk' });
    const [ask] = interruptsOf(await desk.call('ask', { sessionId: 's', clientTools: [confirm] }));
    expect(ask).toMatchObject({ id: 'researcher:call_1', kind: 'client-tool', path: 'researcher' });
    expect(await pendingInterrupts(desk, 's')).toEqual([ask]);
    const done = await desk.call(resumeWith([{ id: ask!.id, approve: true, result: 'yes' }]), {
      sessionId: 's',
      clientTools: [confirm],
    });
    expect(done.content).toBe('The desk reports: Done: yes');
  });
});
