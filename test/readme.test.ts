import { ActionExecutor, ActionReturn, Agent, AgentMessage, AsyncGPTAPI, tool } from 'lagent-ts';
import { MockLLM, startFakeOpenAI } from 'lagent-ts/testing';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';

// The README's snippets, run as written (with a mock model or the fake server in place of a real one).
describe('README', () => {
  it('Quickstart', () => {
    const llm = new MockLLM({ responses: ['急'] });
    const agent = new Agent({ llm, template: 'Answer with one of three characters: 典, 孝, 急.' });
    const reply = agent.call(new AgentMessage({ sender: 'user', content: '今天天气情况' }));
    expect(reply.content).toBe('急');
    expect(agent.memory!.getMemory()).toHaveLength(2);
    expect(agent.stateDict().memory).toHaveLength(2);
    agent.reset();
    expect(agent.memory!.getMemory()).toHaveLength(0);
  });

  it('Models', async () => {
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

  it('Tools', () => {
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
    expect(reply.content.formatResult()).toBe('Sunny in Paris');
  });

  it('Testing your own agents', () => {
    const llm = new MockLLM({ responses: ['Paris'] });
    expect(new Agent({ llm }).call('Capital of France?').content).toBe('Paris');
    expect(llm.calls[0]!.messages.at(-1)).toEqual({ role: 'user', content: 'Capital of France?' });
    llm.assertComplete();
  });
});
