import {
  type AgentMessage,
  AsyncAgent,
  type AsyncForwardOptions,
  AsyncFunctionCallingAgent,
  AsyncSequential,
  asyncTool,
  interruptsOf,
  resumeWith,
  ValidationError,
} from 'lagent-ts';
import { AsyncMockLLM } from 'lagent-ts/testing';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';

/*
 * A composite that is not durable, resumed in the process that paused it: the shape docs/guide/durable-runs.md
 * describes (a planner, then a payer whose tool needs approval). Approving the payer's call must not run the
 * planner again nor hand the payer a new plan (which asks again, forever): the composite's calls are
 * journaled in process, and the resume replays what was done.
 */

function shop() {
  const effects: string[] = [];
  const planner = new AsyncMockLLM({
    responses: (messages) => {
      effects.push('planner');
      return `Plan: pay bob 80 for ${String(messages.at(-1)?.content)}`;
    },
  });
  const payerModel = new AsyncMockLLM({
    responses: (messages) =>
      messages.at(-1)?.role === 'tool'
        ? `payer: ${String(messages.at(-1)!.content)}`
        : { toolCalls: [{ name: 'Pay', arguments: { to: 'bob', amount: 80 } }] },
  });
  const pay = asyncTool({
    name: 'Pay',
    parameters: z.object({ to: z.string(), amount: z.number() }),
    needsApproval: true,
    run: async ({ to, amount }) => {
      effects.push(`pay ${to} ${amount}`);
      return `paid ${to} ${amount}`;
    },
  });
  class Shop extends AsyncAgent {
    planner = new AsyncAgent({ llm: planner, name: 'planner' });
    payer = new AsyncFunctionCallingAgent({ llm: payerModel, actions: [pay], name: 'payer' });
    override async forward(messages: AgentMessage[], { sessionId }: AsyncForwardOptions) {
      const plan = await this.planner.call(messages, { sessionId });
      const paid = await this.payer.call(plan, { sessionId });
      return `shop: ${String(paid.content)}`;
    }
  }
  return { shop: new Shop({ name: 'shop' }), effects };
}

describe('a composite without durable, paused and resumed in one process', () => {
  it('approved: the planner is not asked again, the payment runs once, the call finishes', async () => {
    const { shop: agent, effects } = shop();
    const paused = await agent.call('the bike', { sessionId: 's' });
    const [ask] = interruptsOf(paused);
    expect(ask).toMatchObject({ path: 'payer', toolCall: { name: 'Pay' } });
    const done = await agent.call(resumeWith([{ id: ask!.id, approve: true }]), { sessionId: 's' });
    expect(done.type).not.toBe('interrupt');
    expect(done.content).toBe('shop: payer: paid bob 80');
    expect(effects).toEqual(['planner', 'pay bob 80']);
    // The memories are the ones a call without the pause leaves, and the reply has no callId.
    expect(
      agent
        .memory!.get('s')!
        .getMemory()
        .map((m) => m.content),
    ).toEqual(['the bike', 'shop: payer: paid bob 80']);
    expect(agent.planner.memory!.get('s')!.length).toBe(2);
    expect((done.extraInfo as { callId?: string } | null)?.callId).toBeUndefined();
    // The next message is an ordinary call.
    const next = await agent.call('the helmet', { sessionId: 's' });
    expect(interruptsOf(next)).toHaveLength(1);
    expect(effects).toEqual(['planner', 'pay bob 80', 'planner']);
  });

  it('declined, and resumed again with the same decision: the second resume is refused, nothing runs twice', async () => {
    const { shop: agent, effects } = shop();
    const [ask] = interruptsOf(await agent.call('the bike', { sessionId: 1 }));
    const decline = resumeWith([{ id: ask!.id, approve: false, reason: 'too much' }]);
    const done = await agent.call(decline, { sessionId: 1 });
    expect(String(done.content)).toMatch(/declined this call of Pay: too much/);
    await expect(agent.call(decline, { sessionId: 1 })).rejects.toThrow(ValidationError);
    expect(effects).toEqual(['planner']);
  });

  it('Sequential of the planner and the payer resumes the same way', async () => {
    const { shop: parts, effects } = shop();
    const sequence = new AsyncSequential({ planner: parts.planner, payer: parts.payer });
    const [ask] = interruptsOf(await sequence.call('the bike', { sessionId: 'q' }));
    const done = await sequence.call(resumeWith([{ id: ask!.id, approve: true }]), { sessionId: 'q' });
    expect(done.content).toBe('payer: paid bob 80');
    expect(effects).toEqual(['planner', 'pay bob 80']);
  });

  it('resumed in a fresh agent from stateDict (no journal of the pause): refused, naming durable, before anything runs again', async () => {
    const first = shop();
    const [ask] = interruptsOf(await first.shop.call('the bike', { sessionId: 's' }));
    const saved = JSON.parse(JSON.stringify(first.shop.stateDict('s')));
    const fresh = shop();
    fresh.shop.loadStateDict(saved, 's');
    const error = await fresh.shop
      .call(resumeWith([{ id: ask!.id, approve: true }]), { sessionId: 's' })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ValidationError);
    expect((error as Error).message).toMatch(/durable/);
    expect(fresh.effects).toEqual([]);
    // Nothing of the saved session was lost.
    expect(fresh.shop.stateDict('s')).toEqual(saved);
  });
});
