import {
  type AgentMessage,
  AsyncAgent,
  BudgetExceededError,
  type CallUsage,
  GuardrailTripped,
  guardrail,
  ValidationError,
} from 'lagent-ts';
import { AsyncHTTPAgentClient, HTTPAgentServer } from 'lagent-ts/distributed/http';
import { AsyncMockLLM } from 'lagent-ts/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { type FakeHttpServer, sendJson, startFakeHttp } from '../../helpers/http-server';

const started: HTTPAgentServer[] = [];

async function serve(agent: AsyncAgent): Promise<HTTPAgentServer> {
  const server = new HTTPAgentServer({ agent, port: 0, onError: () => undefined });
  await server.listen();
  started.push(server);
  return server;
}

afterEach(async () => {
  await Promise.all(started.splice(0).map((server) => server.close()));
});

/** A local agent that asks its own model, then the remote agent twice. */
function localWith(remote: AsyncHTTPAgentClient, llm: AsyncMockLLM) {
  class Local extends AsyncAgent {
    own = new AsyncAgent({ llm, name: 'own' });
    remote = remote;
    override async forward(messages: AgentMessage[], options: { sessionId: string | number }) {
      const first = await this.own.call(messages, { sessionId: options.sessionId });
      const second = await this.remote.call(first.content as string, { sessionId: options.sessionId });
      return this.remote.call(second.content as string, { sessionId: options.sessionId });
    }
  }
  return new Local();
}

describe('budgets and guardrails across AsyncHTTPAgentClient', () => {
  it('the remote call gets what is left; what it spent counts in the local budget', async () => {
    const remoteLLM = new AsyncMockLLM({ responses: (_m, _p, i) => `remote ${i}` });
    const server = await serve(new AsyncAgent({ llm: remoteLLM }));
    const local = localWith(
      new AsyncHTTPAgentClient({ url: server.url }),
      new AsyncMockLLM({ responses: ['local'] }),
    );
    const reply = await local.call('go', { sessionId: 1, budget: { modelCalls: 3 } });
    expect(reply.content).toBe('remote 1');
    const usage = (reply.extraInfo as { usage: CallUsage }).usage;
    expect(usage.modelCalls).toBe(3);
    expect(usage.totalTokens).toBeGreaterThan(0);
    // The remote agent was told what was left each time, and said what it spent.
    expect(remoteLLM.calls).toHaveLength(2);
  });

  it('the remote agent refuses the request past the local budget: the local call fails with BudgetExceededError', async () => {
    const remoteLLM = new AsyncMockLLM({ responses: (_m, _p, i) => `remote ${i}` });
    const server = await serve(new AsyncAgent({ llm: remoteLLM }));
    const localLLM = new AsyncMockLLM({ responses: ['local'] });
    const local = localWith(new AsyncHTTPAgentClient({ url: server.url }), localLLM);
    let error: unknown;
    try {
      await local.call('go', { sessionId: 2, budget: { modelCalls: 2 } });
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(BudgetExceededError);
    expect((error as BudgetExceededError).budget).toBe('modelCalls');
    expect(remoteLLM.calls).toHaveLength(1); // zero requests past the budget, on either side
    expect(local.own.memory!.get(2)?.length ?? 0).toBe(0);
  });

  it('a guardrail tripped in the remote agent fails the local call with GuardrailTripped', async () => {
    const server = await serve(
      new AsyncAgent({
        llm: new AsyncMockLLM({ responses: ['never'] }),
        hooks: [guardrail({ name: 'remote-input', on: 'input', check: () => 'not today' })],
      }),
    );
    const local = localWith(
      new AsyncHTTPAgentClient({ url: server.url }),
      new AsyncMockLLM({ responses: ['local'] }),
    );
    const error = await local.call('go', { sessionId: 3 }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(GuardrailTripped);
    expect((error as GuardrailTripped).guardrail).toBe('remote-input');
    expect((error as GuardrailTripped).reason).toBe('not today');
  });
});

/** A remote agent's server that answers every call with `usage` as what it spent (a broken or hostile remote). */
async function reporting(usage: unknown): Promise<FakeHttpServer> {
  const server = await startFakeHttp((_request, response) =>
    sendJson(response, 200, {
      sender: 'remote',
      content: 'remote answer',
      formatted: null,
      extra_info: { usage },
      type: null,
      receiver: null,
      stream_state: 0,
    }),
  );
  fakes.push(server);
  return server;
}

const fakes: FakeHttpServer[] = [];
afterEach(async () => {
  await Promise.all(fakes.splice(0).map((server) => server.close()));
});

describe('remote usage is checked', () => {
  it('negative usage from a remote agent is refused, and refunds nothing', async () => {
    const server = await reporting({
      promptTokens: -5000,
      completionTokens: 0,
      totalTokens: -5000,
      modelCalls: -10,
    });
    const localLLM = new AsyncMockLLM({ responses: (_m, _p, i) => `local ${i}` });
    const local = localWith(new AsyncHTTPAgentClient({ url: server.url }), localLLM);
    const error = await local
      .call('go', { budget: { modelCalls: 3, tokens: 1_000 } })
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(ValidationError);
    expect(String((error as Error).message)).toMatch(/usage/);
    expect(localLLM.calls).toHaveLength(1);
  });

  it('a total below its parts does not hide tokens', async () => {
    const server = await reporting({
      promptTokens: 600,
      completionTokens: 300,
      totalTokens: 0,
      modelCalls: 1,
    });
    const local = localWith(
      new AsyncHTTPAgentClient({ url: server.url }),
      new AsyncMockLLM({ responses: ['local'] }),
    );
    const error = await local.call('go', { budget: { tokens: 1_000 } }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(ValidationError);
    expect((error as ValidationError).field).toBe('extraInfo.usage.totalTokens');
  });

  it('usage past what the remote was allowed is refused', async () => {
    const server = await reporting({
      modelCalls: 50,
      promptTokens: 10,
      completionTokens: 10,
      totalTokens: 20,
    });
    const local = localWith(
      new AsyncHTTPAgentClient({ url: server.url }),
      new AsyncMockLLM({ responses: ['local'] }),
    );
    const error = await local.call('go', { budget: { modelCalls: 3 } }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(ValidationError);
    expect(String((error as Error).message)).toMatch(/modelCalls/);
    // What the remote was sent: what was left of 3 after the local request.
    expect(JSON.parse(server.requests[0]!.body).budget).toEqual({ modelCalls: 2 });
  });

  it("a remote client given the forward's options sends what is left and counts what it spent", async () => {
    const sent: unknown[] = [];
    class Served extends AsyncAgent {
      override forward(messages: AgentMessage[], options: Record<string, unknown>) {
        sent.push(options.budget);
        return super.forward(messages, options as never);
      }
    }
    const server = await serve(
      new Served({ llm: new AsyncMockLLM({ responses: (_m, _p, i) => `remote ${i}` }) }),
    );
    class Local extends AsyncAgent {
      own = new AsyncAgent({ llm: new AsyncMockLLM({ responses: ['local'] }), name: 'own' });
      remote = new AsyncHTTPAgentClient({ url: server.url });
      override async forward(messages: AgentMessage[], options: Record<string, unknown>) {
        const first = await this.own.call(messages, options);
        return this.remote.call(first.content as string, options);
      }
    }
    const reply = await new Local().call('go', { sessionId: 1, budget: { modelCalls: 3 } });
    expect(sent).toEqual([{ modelCalls: 2 }]);
    expect((reply.extraInfo as { usage: CallUsage }).usage.modelCalls).toBe(2);
  });
});

describe('a remote call holds what it was sent', () => {
  it('a local branch running beside a remote call cannot spend what the remote was sent', async () => {
    const sent: unknown[] = [];
    let release: () => void = () => undefined;
    const answered = new Promise<void>((resolve) => {
      release = resolve;
    });
    const server = await startFakeHttp(async (request, response) => {
      sent.push(JSON.parse(request.body).budget);
      await answered;
      sendJson(response, 200, {
        sender: 'remote',
        content: 'remote answer',
        formatted: null,
        extra_info: { usage: { promptTokens: 300, completionTokens: 100, totalTokens: 400, modelCalls: 1 } },
        type: null,
        receiver: null,
        stream_state: 0,
      });
    });
    fakes.push(server);
    const localLLM = new AsyncMockLLM({ responses: (_m, _p, i) => `local ${i}` });
    class Both extends AsyncAgent {
      remote = new AsyncHTTPAgentClient({ url: server.url });
      own = new AsyncAgent({ llm: localLLM, name: 'own' });
      override async forward(messages: AgentMessage[]) {
        const remote = this.remote.call('go');
        // The remote call holds all that was left: the local request beside it finds no room.
        while (sent.length === 0) await new Promise((resolve) => setImmediate(resolve));
        const local = this.own.call(messages).catch((error: unknown) => error);
        const outcome = await local;
        release();
        await remote;
        return String(outcome instanceof Error ? outcome.name : 'answered');
      }
    }
    const reply = await new Both().call('hi', { budget: { tokens: 1_000 } });
    expect(sent).toEqual([{ tokens: 1_000 }]);
    expect(reply.content).toBe('BudgetExceededError');
    expect(localLLM.calls).toHaveLength(0);
    expect((reply.extraInfo as { usage: CallUsage }).usage.totalTokens).toBe(400);
  });

  it('a remote stream counts what its final message says it spent', async () => {
    const remoteLLM = new AsyncMockLLM({ responses: (_m, _p, i) => `remote ${i}` });
    const server = await serve(new AsyncAgent({ llm: remoteLLM }));
    class Streaming extends AsyncAgent {
      remote = new AsyncHTTPAgentClient({ url: server.url });
      override async forward() {
        let last: AgentMessage | undefined;
        for await (const chunk of this.remote.stream('go')) last = chunk;
        return last!;
      }
    }
    const reply = await new Streaming().call('hi', { budget: { modelCalls: 2 } });
    expect((reply.extraInfo as { usage: CallUsage }).usage.modelCalls).toBe(1);
  });
});
