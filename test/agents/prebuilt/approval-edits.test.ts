import {
  type AgentMessage,
  AsyncActionExecutor,
  AsyncAgent,
  AsyncFunctionCallingAgent,
  asyncTool,
  type ForwardOptions,
  FunctionCallingAgent,
  interruptsOf,
  MemoryStore,
  ReAct,
  resumeWith,
  tool,
} from 'lagent-ts';
import { AsyncMockLLM, MockLLM } from 'lagent-ts/testing';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';

/*
 * A person who edits a call's arguments before approving it changes what ran, and the model's history says
 * so: the call shows the arguments it ran with (not the ones the model wrote), and its result says a person
 * edited them; in later turns too, after a reload, and in a durable replay.
 */

function transfer(runs: number[]) {
  return tool({
    name: 'Transfer',
    parameters: z.object({ amount: z.number() }),
    needsApproval: true,
    run: ({ amount }) => {
      runs.push(amount);
      return `transferred ${amount}`;
    },
  });
}

/** The assistant tool calls and tool results a model request carried. */
function toolTurns(messages: readonly { role: string; content: unknown; toolCalls?: unknown }[]) {
  return messages
    .filter((m) => m.toolCalls !== undefined || m.role === 'tool')
    .map((m) => (m.role === 'tool' ? { tool: m.content } : { calls: m.toolCalls }));
}

describe('the model sees edited arguments as what ran', () => {
  for (const durable of [false, true]) {
    it(`function calling${durable ? ', durable' : ''}: the next request and later ones show amount 80 and say a person edited it`, () => {
      const runs: number[] = [];
      const llm = new MockLLM({
        responses: [
          { toolCalls: [{ id: 'call_t', name: 'Transfer', arguments: { amount: 500 } }] },
          'Sent 80.',
          'You sent 80.',
        ],
      });
      const agent = new FunctionCallingAgent({
        llm,
        actions: [transfer(runs)],
        ...(durable ? { durable: { store: new MemoryStore() } } : {}),
      });
      const [ask] = interruptsOf(agent.call('Send 500 to bob'));
      agent.call(resumeWith([{ id: ask!.id, approve: true, arguments: { amount: 80 } }]));
      expect(runs).toEqual([80]);
      const expected = [
        { calls: [{ id: 'call_t', name: 'Transfer', arguments: { amount: 80 } }] },
        { tool: expect.stringMatching(/^The user edited the arguments.*\n?transferred 80$/s) },
      ];
      expect(toolTurns(llm.calls[1]!.messages)).toEqual(expected);
      // A later turn, after a reload into a fresh agent, still shows what ran.
      const fresh = new FunctionCallingAgent({ llm, actions: [transfer(runs)] });
      fresh.loadStateDict(JSON.parse(JSON.stringify(agent.stateDict(0))));
      fresh.call('How much did I send?');
      expect(toolTurns(llm.calls[2]!.messages)).toEqual(expected);
      expect(JSON.stringify(llm.calls.map((call) => call.messages))).not.toMatch(/"amount":500\}\]/);
    });
  }

  it("an executor in a composite's forward: the planner's history shows the edited call", async () => {
    const runs: number[] = [];
    const llm = new AsyncMockLLM({
      responses: [{ toolCalls: [{ name: 'Transfer', arguments: { amount: 500 } }] }, 'Sent 80.'],
    });
    class Bank extends AsyncAgent {
      planner = new AsyncAgent({ llm, name: 'planner', tools: [] });
      executor = new AsyncActionExecutor({
        actions: [
          asyncTool({
            name: 'Transfer',
            parameters: z.object({ amount: z.number() }),
            needsApproval: true,
            run: async ({ amount }) => {
              runs.push(amount);
              return `transferred ${amount}`;
            },
          }),
        ],
      });
      override async forward(messages: AgentMessage[], options: ForwardOptions) {
        const plan = await this.planner.call(messages, { sessionId: options.sessionId });
        const results = await this.executor.call(plan, { sessionId: options.sessionId });
        return this.planner.call(results, { sessionId: options.sessionId });
      }
    }
    const bank = new Bank({ name: 'bank' });
    const [ask] = interruptsOf(await bank.call('Send 500 to bob'));
    await bank.call(resumeWith([{ id: ask!.id, approve: true, arguments: { amount: 80 } }]));
    expect(runs).toEqual([80]);
    expect(toolTurns(llm.calls[1]!.messages)).toEqual([
      { calls: [{ id: ask!.toolCall.id, name: 'Transfer', arguments: { amount: 80 } }] },
      { tool: expect.stringMatching(/^The user edited the arguments.*transferred 80$/s) },
    ]);
  });

  it('async function calling: the toolStart event reports the call as it ran', async () => {
    const runs: number[] = [];
    const agent = new AsyncFunctionCallingAgent({
      llm: new AsyncMockLLM({
        responses: [{ toolCalls: [{ name: 'Transfer', arguments: { amount: 500 } }] }, 'ok'],
      }),
      actions: [transfer(runs)],
    });
    const started: unknown[] = [];
    agent.events.on('toolStart', (event) => started.push(event.toolCalls[0]!.arguments));
    const [ask] = interruptsOf(await agent.call('go'));
    await agent.call(resumeWith([{ id: ask!.id, approve: true, arguments: { amount: 80 } }]));
    expect(started).toEqual([{ amount: 80 }]);
  });

  it('ReAct: the observation says a person edited the arguments, and what ran', () => {
    const runs: number[] = [];
    const step = JSON.stringify({
      thought_process: 'send it',
      action: { name: 'Transfer', parameters: { amount: 500 } },
    });
    const llm = new MockLLM({
      responses: [step, JSON.stringify({ thought_process: 'done', conclusion: 'Sent.' })],
    });
    const agent = new ReAct({ llm, actions: [transfer(runs)], language: 'en' });
    const [ask] = interruptsOf(agent.call('Send 500 to bob'));
    agent.call(resumeWith([{ id: ask!.id, approve: true, arguments: { amount: 80 } }]));
    expect(runs).toEqual([80]);
    const observation = llm.calls[1]!.messages.filter((m) => m.role === 'user').at(-1)!.content;
    expect(observation).toMatch(/The user edited the arguments.*Transfer with \{"amount":80\}/);
    expect(observation).toMatch(/transferred 80/);
  });
});
