import type { ChatMessage, ModelReply, OpenAITool, StreamChunk, ToolCall } from 'lagent-ts';
import {
  AsyncGPTAPI,
  AsyncVllmModel,
  ConfigurationError,
  INTERNLM2_META,
  ModelOutputError,
  ModelStatusCode,
  toolkit,
} from 'lagent-ts';
import { type FakeOpenAIServer, type FakeReply, startFakeOpenAI } from 'lagent-ts/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { echo } from '../helpers/tools';

const user = (content: string): ChatMessage[] => [{ role: 'user', content }];

const calculator = toolkit({
  name: 'Calculator',
  description: 'Arithmetic',
  apis: {
    add: {
      description: 'a + b',
      parameters: z.object({ a: z.number(), b: z.number() }),
      run: ({ a, b }) => a + b,
    },
    mul: {
      description: 'a * b',
      parameters: z.object({ a: z.number(), b: z.number() }),
      run: ({ a, b }) => a * b,
    },
  },
});
const searchJSON: OpenAITool = {
  type: 'function',
  function: {
    name: 'search',
    description: 'Web search',
    parameters: { type: 'object', properties: { q: { type: 'string' } }, required: ['q'] },
  },
};

let server: FakeOpenAIServer;
beforeAll(async () => {
  server = await startFakeOpenAI();
});
afterAll(() => server.close());

function client(options: ConstructorParameters<typeof AsyncGPTAPI>[0] = {}) {
  return new AsyncGPTAPI({
    model: 'tool-model',
    apiKey: 'sk-tools',
    baseURL: server.baseURL,
    retry: 0,
    ...options,
  });
}

function lastRequest() {
  const request = server.requests.at(-1);
  if (request === undefined) throw new Error('no request');
  return request;
}

async function collect(stream: AsyncIterable<StreamChunk>): Promise<StreamChunk[]> {
  const chunks: StreamChunk[] = [];
  for await (const chunk of stream) chunks.push(chunk);
  return chunks;
}

describe('tools in the request', () => {
  it('sends actions, toolkits and OpenAI JSON as OpenAI tools, toolkit APIs named Name__api', async () => {
    server.setScript(['ok']);
    await client().generate(user('hi'), {
      tools: [calculator, echo, searchJSON],
      toolChoice: { name: 'Calculator.add' },
      parallelToolCalls: false,
    });
    const body = lastRequest().body;
    expect(body.tools.map((entry: OpenAITool) => entry.function.name)).toEqual([
      'Calculator__add',
      'Calculator__mul',
      'echo',
      'search',
    ]);
    expect(body.tools[0]).toEqual({
      type: 'function',
      function: {
        name: 'Calculator__add',
        description: 'a + b',
        parameters: calculator.toOpenAITools()[0]?.function.parameters,
      },
    });
    expect(body.tools[3]).toEqual(searchJSON);
    expect(body.tool_choice).toEqual({ type: 'function', function: { name: 'Calculator__add' } });
    expect(body.parallel_tool_calls).toBe(false);
  });

  it('sends string tool choices as they are, and nothing about tools when none are offered', async () => {
    server.setScript(['ok', 'ok', 'ok']);
    const llm = client();
    await llm.chat(user('hi'), { tools: [searchJSON], toolChoice: 'required', parallelToolCalls: true });
    expect(lastRequest().body).toMatchObject({ tool_choice: 'required', parallel_tool_calls: true });
    await llm.chat(user('hi'));
    expect(lastRequest().body).not.toHaveProperty('tools');
    await llm.chat(user('hi'), { tools: [], toolChoice: 'auto', parallelToolCalls: true });
    for (const key of ['tools', 'tool_choice', 'parallel_tool_calls']) {
      expect(lastRequest().body).not.toHaveProperty(key);
    }
  });

  it('a JSON tool named Name.api is sent as Name__api and its calls come back as Name.api', async () => {
    server.setScript([{ toolCalls: [{ name: 'Weather__now', arguments: { city: 'Paris' } }] }]);
    const dotted: OpenAITool = { ...searchJSON, function: { ...searchJSON.function, name: 'Weather.now' } };
    const reply = await client().generate(user('weather?'), { tools: [dotted] });
    expect(lastRequest().body.tools[0].function.name).toBe('Weather__now');
    expect(reply.toolCalls[0]?.name).toBe('Weather.now');
  });

  it('rejects what is not a tool, and two tools with one name', async () => {
    const llm = client();
    await expect(llm.generate(user('x'), { tools: [{ name: 'nope' } as never] })).rejects.toThrow(
      ConfigurationError,
    );
    await expect(llm.generate(user('x'), { tools: [{ name: 'nope' } as never] })).rejects.toThrow(
      /neither an action nor OpenAI function-tool JSON/,
    );
    await expect(llm.generate(user('x'), { tools: [searchJSON, searchJSON] })).rejects.toThrow(
      /two tools are named search/,
    );
  });
});

describe('tool calls in the reply (non-streaming)', () => {
  it('returns the calls typed, arguments parsed, toolkit names mapped back', async () => {
    server.setScript([
      {
        content: 'Let me compute.',
        toolCalls: [
          { id: 'call_a', name: 'Calculator__add', arguments: { a: 1, b: 2 } },
          { id: 'call_b', name: 'search', arguments: '{"q": "lagent"}' },
        ],
      },
    ]);
    const reply = await client().generate(user('1+2?'), { tools: [calculator, searchJSON] });
    expect(reply).toEqual<ModelReply>({
      usage: { promptTokens: 9, completionTokens: 55, totalTokens: 64 },
      content: 'Let me compute.',
      toolCalls: [
        { id: 'call_a', name: 'Calculator.add', arguments: { a: 1, b: 2 } },
        { id: 'call_b', name: 'search', arguments: { q: 'lagent' } },
      ],
      finishReason: 'tool_calls',
    });
  });

  it('maps Name__api back only for a toolkit API among the tools offered', async () => {
    server.setScript([{ toolCalls: [{ id: 'c', name: 'Calculator__add', arguments: {} }] }]);
    const reply = await client().generate(user('x'), { tools: [searchJSON] });
    expect(reply.toolCalls[0]?.name).toBe('Calculator__add');
  });

  it('keeps arguments that are not a JSON object as the raw text ({} for none)', async () => {
    server.setScript([
      {
        toolCalls: [
          { id: '1', name: 'search', arguments: '{"q": "unfinished' },
          { id: '2', name: 'search', arguments: '[1, 2]' },
          { id: '3', name: 'search', arguments: 'q=lagent' },
          { id: '4', name: 'search', arguments: '' },
        ],
      },
    ]);
    const reply = await client().generate(user('x'), { tools: [searchJSON] });
    expect(reply.toolCalls.map((call) => call.arguments)).toEqual([
      '{"q": "unfinished',
      '[1, 2]',
      'q=lagent',
      {},
    ]);
  });

  it('chat() refuses a tool-call answer with a clear error instead of returning an empty string', async () => {
    server.setScript({
      toolCalls: [
        { name: 'Calculator__add', arguments: { a: 1, b: 2 } },
        { name: 'search', arguments: {} },
      ],
    });
    const llm = client();
    const failure = llm.chat(user('x'), { tools: [calculator, searchJSON] });
    await expect(failure).rejects.toThrow(ModelOutputError);
    await expect(llm.chat(user('x'), { tools: [calculator, searchJSON] })).rejects.toThrow(
      /AsyncGPTAPI: the model answered with 2 tool calls \(Calculator\.add, search\).*use generate\(\) or a function-calling agent/,
    );
  });

  it('generate() on a text answer has no tool calls and the finish reason', async () => {
    server.setScript(['plain<|im_end|>tail']);
    const reply = await client().generate(user('x'), { stopWords: ['<|im_end|>'] });
    expect(reply).toEqual({
      content: 'plain',
      toolCalls: [],
      finishReason: 'stop',
      usage: { promptTokens: 8, completionTokens: 2, totalTokens: 10 },
    });
  });
});

describe('tool calls in a streamed reply', () => {
  const calls: ToolCall[] = [
    { id: 'call_x', name: 'Calculator.add', arguments: { a: 12, b: 30, note: 'ünïcode "quoted" {braces}' } },
    { id: 'call_y', name: 'search', arguments: { q: 'what is 42', filters: { year: [2023, 2024] } } },
    { id: 'call_z', name: 'echo', arguments: { text: '' } },
  ];
  const script = (chunkSize: number, interleave: boolean, content = ''): FakeReply => ({
    content,
    chunkSize,
    interleaveToolCalls: interleave,
    toolCalls: calls.map((call) => ({ ...call, name: call.name.replace('.', '__') })),
  });

  it('assembles the calls on the END chunk, the text streaming as before', async () => {
    server.setScript(script(5, false, 'Computing, hold on.'));
    const chunks = await collect(
      client().streamChat(user('x'), { tools: [calculator, searchJSON, echo], stopWords: ['NEVER'] }),
    );
    const end = chunks.at(-1);
    expect(end?.state).toBe(ModelStatusCode.END);
    expect(end?.content).toBe('Computing, hold on.');
    expect(end?.toolCalls).toEqual(calls);
    expect(chunks.slice(0, -1).every((chunk) => chunk.toolCalls === undefined)).toBe(true);
    expect(
      chunks
        .filter((chunk) => chunk.state === ModelStatusCode.STREAM_ING)
        .map((chunk) => chunk.delta)
        .join(''),
    ).toBe('Computing, hold on.');
    expect(lastRequest().body.stream).toBe(true);
    expect(lastRequest().body.tools).toHaveLength(4);
  });

  it('arguments split at every position assemble to the same calls, one after another or interleaved', async () => {
    const llm = client();
    const longest = Math.max(...calls.map((call) => JSON.stringify(call.arguments).length));
    for (const interleave of [false, true]) {
      for (let chunkSize = 1; chunkSize <= longest + 1; chunkSize++) {
        server.setScript(script(chunkSize, interleave));
        const chunks = await collect(llm.streamChat(user('x'), { tools: [calculator, searchJSON, echo] }));
        expect(chunks, `chunkSize ${chunkSize}, interleave ${interleave}`).toEqual([
          { state: ModelStatusCode.END, content: '', delta: '', toolCalls: calls },
        ]);
      }
    }
  });

  it('keeps streamed arguments that are not JSON as text', async () => {
    server.setScript({ chunkSize: 2, toolCalls: [{ id: 'c', name: 'search', arguments: 'not {json' }] });
    const chunks = await collect(client().streamChat(user('x'), { tools: [searchJSON] }));
    expect(chunks.at(-1)?.toolCalls).toEqual([{ id: 'c', name: 'search', arguments: 'not {json' }]);
  });

  it('assembles deltas from raw events: interleaved indexes, pieces split inside escapes, ids only first', async () => {
    const event = (delta: unknown) =>
      JSON.stringify({
        id: 'e',
        object: 'chat.completion.chunk',
        choices: [{ index: 0, delta, finish_reason: null }],
      });
    server.setScript({
      events: [
        event({ role: 'assistant', content: null }),
        event({
          tool_calls: [
            { index: 1, id: 'second', type: 'function', function: { name: 'search', arguments: '' } },
          ],
        }),
        event({
          tool_calls: [
            {
              index: 0,
              id: 'first',
              type: 'function',
              function: { name: 'Calculator__mul', arguments: '{"a"' },
            },
          ],
        }),
        event({ tool_calls: [{ index: 1, function: { arguments: '{"q":"a\\' } }] }),
        event({ tool_calls: [{ index: 0, function: { arguments: ': 6, "b": 7}' } }] }),
        event({ tool_calls: [{ index: 1, function: { arguments: '"b"}' } }] }),
        JSON.stringify({ id: 'e', choices: [{ index: 0, delta: {}, finish_reason: 'tool_calls' }] }),
        '[DONE]',
      ],
    });
    const chunks = await collect(client().streamChat(user('x'), { tools: [calculator, searchJSON] }));
    expect(chunks).toEqual([
      {
        state: ModelStatusCode.END,
        content: '',
        delta: '',
        toolCalls: [
          { id: 'first', name: 'Calculator.mul', arguments: { a: 6, b: 7 } },
          { id: 'second', name: 'search', arguments: { q: 'a"b' } },
        ],
      },
    ]);
  });
});

describe('history with tool turns', () => {
  it('sends assistant tool calls as tool_calls and results as tool messages, never merged', async () => {
    server.setScript(['The sum is 3.']);
    const history: ChatMessage[] = [
      { role: 'system', content: 'Use tools.' },
      { role: 'user', content: '1+2 and search' },
      { role: 'assistant', content: 'Thinking.' },
      {
        role: 'assistant',
        content: null,
        toolCalls: [
          { id: 'call_1', name: 'Calculator.add', arguments: { a: 1, b: 2 } },
          { id: 'call_2', name: 'search', arguments: 'bad {json' },
        ],
      },
      { role: 'tool', content: '3', toolCallId: 'call_1', name: 'Calculator.add' },
      { role: 'tool', content: 'no results', toolCallId: 'call_2' },
    ];
    const reply = await client().chat(history, { tools: [calculator, searchJSON] });
    expect(reply).toBe('The sum is 3.');
    expect(lastRequest().body.messages).toEqual([
      { role: 'system', content: 'Use tools.' },
      { role: 'user', content: '1+2 and search' },
      { role: 'assistant', content: 'Thinking.' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          {
            id: 'call_1',
            type: 'function',
            function: { name: 'Calculator__add', arguments: '{"a":1,"b":2}' },
          },
          { id: 'call_2', type: 'function', function: { name: 'search', arguments: 'bad {json' } },
        ],
      },
      { role: 'tool', content: '3', tool_call_id: 'call_1' },
      { role: 'tool', content: 'no results', tool_call_id: 'call_2' },
    ]);
    expect(history[3]).not.toHaveProperty('tool_calls');
  });
});

describe('raw-prompt clients', () => {
  it('send tools in chat-completions mode and return the calls', async () => {
    server.setScript([{ toolCalls: [{ id: 'v1', name: 'Calculator__add', arguments: { a: 2, b: 2 } }] }]);
    const llm = new AsyncVllmModel({ model: 'served', baseURL: server.baseURL, retry: 0 });
    const reply = await llm.generate(user('2+2'), { tools: [calculator], toolChoice: 'auto' });
    expect(lastRequest().endpoint).toBe('chat');
    expect(lastRequest().body.tool_choice).toBe('auto');
    expect(lastRequest().body.tools.map((entry: OpenAITool) => entry.function.name)).toEqual([
      'Calculator__add',
      'Calculator__mul',
    ]);
    expect(reply.toolCalls).toEqual([{ id: 'v1', name: 'Calculator.add', arguments: { a: 2, b: 2 } }]);
  });

  it('refuse tools with a metaTemplate (raw /completions has no function calling), saying why', async () => {
    const llm = new AsyncVllmModel({
      model: 'served',
      baseURL: server.baseURL,
      metaTemplate: INTERNLM2_META,
      retry: 0,
    });
    const before = server.requests.length;
    await expect(llm.generate(user('x'), { tools: [calculator] })).rejects.toThrow(ConfigurationError);
    await expect(llm.chat(user('x'), { tools: [calculator] })).rejects.toThrow(
      /metaTemplate.*no function calling/,
    );
    expect(server.requests.length).toBe(before);
    server.setScript(['raw text']);
    expect(await llm.chat(user('x'))).toBe('raw text');
  });
});
