import { type FakeOpenAIServer, startFakeOpenAI } from 'lagent-ts/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

let server: FakeOpenAIServer;
beforeAll(async () => {
  server = await startFakeOpenAI();
});
afterAll(() => server.close());

async function post(body: Record<string, unknown>): Promise<Response> {
  return fetch(`${server.baseURL}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'x' }], ...body }),
  });
}

/** The `delta.tool_calls` entries of an SSE body, in order. */
async function toolDeltas(response: Response): Promise<any[]> {
  const text = await response.text();
  return text
    .split('\n\n')
    .map((block) => block.replace(/^data: /, ''))
    .filter((payload) => payload.startsWith('{'))
    .flatMap((payload) => JSON.parse(payload).choices?.[0]?.delta?.tool_calls ?? []);
}

describe('fake OpenAI server: scripted tool calls', () => {
  it('answers message.tool_calls with finish_reason tool_calls (ids call_<n>, arguments as JSON text)', async () => {
    server.setScript({
      toolCalls: [
        { name: 'f', arguments: { a: 1 } },
        { id: 'mine', name: 'g', arguments: 'raw' },
      ],
    });
    const json: any = await (await post({})).json();
    const choice = json.choices[0];
    expect(choice.finish_reason).toBe('tool_calls');
    expect(choice.message.content).toBeNull();
    expect(choice.message.tool_calls).toEqual([
      {
        id: expect.stringMatching(/^call_\d+$/),
        type: 'function',
        function: { name: 'f', arguments: '{"a":1}' },
      },
      { id: 'mine', type: 'function', function: { name: 'g', arguments: 'raw' } },
    ]);
  });

  it('streams a first delta per call with index, id, type and name, then the arguments in chunkSize pieces', async () => {
    server.setScript({ chunkSize: 4, toolCalls: [{ id: 'a', name: 'f', arguments: '{"x": 10}' }] });
    const deltas = await toolDeltas(await post({ stream: true }));
    expect(deltas).toEqual([
      { index: 0, id: 'a', type: 'function', function: { name: 'f', arguments: '' } },
      { index: 0, function: { arguments: '{"x"' } },
      { index: 0, function: { arguments: ': 10' } },
      { index: 0, function: { arguments: '}' } },
    ]);
  });

  it('sends calls one after another, or alternating by index with interleaveToolCalls', async () => {
    const toolCalls = [
      { id: 'a', name: 'f', arguments: '{"x":1}' },
      { id: 'b', name: 'g', arguments: '{}' },
    ];
    server.setScript([
      { chunkSize: 4, toolCalls },
      { chunkSize: 4, toolCalls, interleaveToolCalls: true },
    ]);
    const sequential = await toolDeltas(await post({ stream: true }));
    expect(sequential.map((delta) => delta.index)).toEqual([0, 0, 0, 1, 1]);
    const interleaved = await toolDeltas(await post({ stream: true }));
    expect(interleaved.map((delta) => delta.index)).toEqual([0, 1, 0, 1, 0]);
    expect(
      interleaved
        .filter((delta) => delta.index === 0)
        .map((delta) => delta.function.arguments)
        .join(''),
    ).toBe('{"x":1}');
  });
});
