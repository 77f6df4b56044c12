import { existsSync, readFileSync } from 'node:fs';
import {
  ActionExecutor,
  ActionReturn,
  Agent,
  AgentMessage,
  AsyncAgent,
  type AsyncForwardOptions,
  AsyncFunctionCallingAgent,
  AsyncGPTAPI,
  AsyncStreamingAgent,
  tool,
} from 'lagent-ts';
import { AsyncHTTPAgentClient, HTTPAgentServer } from 'lagent-ts/distributed';
import { AsyncMockLLM, MockLLM, startFakeOpenAI } from 'lagent-ts/testing';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { documentationFiles } from './docs/code-blocks';

// The snippets of the README and the docs pages (docs/guide/<page>.md), run as written (with a mock model or
// the fake server in place of a real one).
describe('README and docs snippets', () => {
  it('Quickstart (README, getting-started)', () => {
    const llm = new MockLLM({ responses: ['急'] });
    const agent = new Agent({ llm, template: 'Answer with one of three characters: 典, 孝, 急.' });
    const reply = agent.call(new AgentMessage({ sender: 'user', content: '今天天气情况' }));
    expect(reply.content).toBe('急');
    expect(agent.memory!.getMemory()).toHaveLength(2);
    expect(agent.stateDict().memory).toHaveLength(2);
    agent.reset();
    expect(agent.memory!.getMemory()).toHaveLength(0);
  });

  it('sessions-and-stores: one call per session at a time', async () => {
    let n = 0;
    const llm = new AsyncMockLLM({ latencyMs: 5, responses: () => `a${++n}` });
    const agent = new AsyncAgent({ llm });
    await Promise.all([agent.call('q1', { sessionId: 1 }), agent.call('q2', { sessionId: 1 })]);
    expect(agent.memory!.getMemory(1).map((m) => m.content)).toEqual(['q1', 'a1', 'q2', 'a2']);
  });

  it('agents: streaming and cancellation', async () => {
    const llm = new AsyncMockLLM({ latencyMs: 1_000, responses: () => 'text' });
    class Blogger extends AsyncAgent {
      writer = new AsyncAgent({ llm, name: 'writer' });
      critic = new AsyncAgent({ llm, name: 'critic' });
      override async forward([message]: AgentMessage[], { sessionId }: AsyncForwardOptions) {
        const draft = await this.writer.call(message, { sessionId });
        return this.critic.call(draft, { sessionId });
      }
    }
    const blogger = new Blogger();
    await expect(blogger.call('topic', { sessionId: 1, signal: AbortSignal.timeout(100) })).rejects.toThrow();
    expect(blogger.stateDict(1)).toEqual({ memory: [], 'writer.memory': [], 'critic.memory': [] });

    const agent = new AsyncStreamingAgent({
      llm: new AsyncMockLLM({ responses: ['hello there'], chunkSize: 4 }),
    });
    let printed = '';
    for await (const chunk of agent.call('hello')) printed += chunk.delta ?? '';
    expect(printed).toBe('hello there');
  });

  it('porting-from-lagent: interop with Python Lagent', () => {
    const agent = new Agent({ llm: new MockLLM({ responses: ['one', 'two', 'two'] }) });
    agent.call('hi', { sessionId: 7 });
    const dict = agent.stateDict(7, { format: 'lagent' });
    expect(Object.keys(dict.memory![0]!)).toContain('stream_state');
    const restored = new Agent({ llm: new MockLLM({ responses: ['two'] }) });
    restored.loadStateDict(JSON.parse(JSON.stringify(dict)), 7);
    expect(restored.stateDict(7)).toEqual(agent.stateDict(7));
    const message = new AgentMessage({ content: 'x', extraInfo: { a: 1 } });
    expect(message.toJSON({ format: 'lagent' })).toMatchObject({ extra_info: { a: 1 }, stream_state: 0 });
  });

  it('models: OpenAI and compatible servers', async () => {
    const server = await startFakeOpenAI({ script: ['hello<|im_end|>ignored'] });
    try {
      const llm = new AsyncGPTAPI({
        model: 'gpt-4o-mini',
        apiKey: ['key-a', 'key-b'],
        baseURL: server.baseURL,
        retry: 3,
        stopWords: ['<|im_end|>'],
      });
      const signal = new AbortController().signal;
      const text = await llm.chat([{ role: 'user', content: 'hi' }], { temperature: 0, signal });
      expect(text).toBe('hello');
      expect(server.requests[0]!.body).toMatchObject({ model: 'gpt-4o-mini', temperature: 0 });
    } finally {
      await server.close();
    }
  });

  it('function-calling', async () => {
    const server = await startFakeOpenAI({
      script: [{ toolCalls: [{ name: 'Weather', arguments: { city: 'Paris' } }] }, 'Sunny in Paris.'],
    });
    try {
      const weather = tool({
        name: 'Weather',
        description: 'Current weather of a city',
        parameters: z.object({ city: z.string().describe('City name') }),
        run: ({ city }) => `Sunny in ${city}`,
      });
      const llm = new AsyncGPTAPI({ model: 'gpt-4o-mini', baseURL: server.baseURL, apiKey: 'k' });
      const agent = new AsyncFunctionCallingAgent({ llm, actions: [weather] });
      const reply = await agent.call('Weather in Paris?');
      expect(reply.content).toBe('Sunny in Paris.');
      expect(agent.agent.memory!.getMemory()).toHaveLength(4);
      expect((server.requests[0]!.body as { tools: unknown[] }).tools).toHaveLength(1);
    } finally {
      await server.close();
    }
  });

  it('tools: executors', () => {
    const weather = tool({
      name: 'Weather',
      description: 'Current weather of a city',
      parameters: z.object({ city: z.string().describe('City name') }),
      run: ({ city }) => `Sunny in ${city}`,
    });
    const executor = new ActionExecutor({ actions: [weather] });
    const reply = executor.call(
      new AgentMessage({ sender: 'Agent', content: { name: 'Weather', parameters: { city: 'Paris' } } }),
    );
    expect(reply.content).toBeInstanceOf(ActionReturn);
    expect((reply.content as ActionReturn).formatResult()).toBe('Sunny in Paris');
  });

  it('testing', () => {
    const llm = new MockLLM({ responses: ['Paris'] });
    expect(new Agent({ llm }).call('Capital of France?').content).toBe('Paris');
    expect(llm.calls[0]!.messages.at(-1)).toEqual({ role: 'user', content: 'Capital of France?' });
    llm.assertComplete();
  });

  it('serving: an agent over HTTP', async () => {
    const llm = new AsyncMockLLM({ responses: ['Yes: keep-alive is the default.'] });
    const expert = new AsyncAgent({ llm, name: 'expert' });
    const server = new HTTPAgentServer({ agent: expert, port: 0 });
    await server.listen();
    class Coordinator extends AsyncAgent {
      expert = new AsyncHTTPAgentClient({ url: server.url, timeout: 60_000 });
      override async forward(messages: AgentMessage[], { sessionId }: AsyncForwardOptions) {
        const answer = await this.expert.call(messages, { sessionId });
        return new AgentMessage({ sender: this.name, content: `The expert says: ${answer.content}` });
      }
    }
    const coordinator = new Coordinator();
    const reply = await coordinator.call('Does HTTP/1.1 reuse connections?', { sessionId: 1 });
    expect(reply.content).toBe('The expert says: Yes: keep-alive is the default.');
    const state = await coordinator.expert.stateDict(1);
    expect(state.memory!.map((message) => message.sender)).toEqual(['user', 'expert']);
    coordinator.expert.close();
    await server.close();
  });

  it('names only examples that exist', () => {
    const text = documentationFiles()
      .map((file) => readFileSync(new URL(`../${file}`, import.meta.url), 'utf8'))
      .join('\n');
    const named = [...text.matchAll(/`((?:examples\/)?[\w/-]+\.ts)`/g)].map((match) => match[1]!);
    const examples = named.filter((name) => !name.includes('/') || name.startsWith('examples/'));
    expect(examples.length).toBeGreaterThan(10);
    for (const name of examples) {
      const path = name.startsWith('examples/') ? name : `examples/${name}`;
      expect(existsSync(new URL(`../${path}`, import.meta.url)), path).toBe(true);
    }
  });
});
