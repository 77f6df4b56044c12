import { FunctionCallingAgent, OpenAIResponsesAPI } from 'lagent-ts';
import { type FakeOpenAIWorkerServer, startFakeOpenAIWorker } from 'lagent-ts/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { calculator } from '../helpers/tools';

// OpenAIResponsesAPI blocks this thread while it waits, so the server runs on another thread.
let server: FakeOpenAIWorkerServer;
let llm: OpenAIResponsesAPI;
beforeAll(() => {
  server = startFakeOpenAIWorker();
  llm = new OpenAIResponsesAPI({ model: 'gpt-5-mini', apiKey: 'sk-sync', baseURL: server.baseURL, retry: 0 });
});
afterAll(() => {
  llm.close();
  server.close();
});

describe('OpenAIResponsesAPI (sync, through the bridge)', () => {
  it('runs a tool loop that carries its reasoning item, and streams', () => {
    server.setScript([
      {
        reasoning: 'Use the tool.',
        toolCalls: [{ id: 'c1', name: 'Calculator__add', arguments: { a: 1, b: 1 } }],
      },
      'Two.',
      { reasoning: 'Short.', content: 'Streamed.', chunkSize: 3 },
    ]);
    const agent = new FunctionCallingAgent({ llm, actions: [calculator] });
    expect(agent.call('1 + 1?').content).toBe('Two.');
    const input = server.requests()[1]!.body.input as { type?: string }[];
    expect(input.map((item) => item.type ?? 'message')).toEqual([
      'message',
      'reasoning',
      'function_call',
      'function_call_output',
    ]);
    const chunks = [...llm.streamChat([{ role: 'user', content: 'hi' }])];
    expect(chunks.map((chunk) => chunk.reasoningDelta ?? '').join('')).toBe('Short.');
    expect(chunks.at(-1)).toMatchObject({ content: 'Streamed.', reasoning: 'Short.' });
  });

  it('sends a zod response format across the bridge as its strict JSON schema', () => {
    server.setScript(['{"city":"Rome"}']);
    llm.generate([{ role: 'user', content: 'city?' }], {
      responseFormat: { type: 'json', schema: z.object({ city: z.string() }) },
    });
    expect(server.requests().at(-1)?.body.text).toEqual({
      format: {
        type: 'json_schema',
        name: 'response',
        strict: true,
        schema: {
          type: 'object',
          properties: { city: { type: 'string' } },
          required: ['city'],
          additionalProperties: false,
        },
      },
    });
  });
});
