import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AgentMessage, StreamChunk } from 'lagent-ts';
import {
  AsyncAgent,
  AsyncCachedLLM,
  AsyncClaudeAPI,
  AsyncFunctionCallingAgent,
  AsyncGPTAPI,
  AsyncOpenAIResponsesAPI,
  AsyncRecordingLLM,
  AsyncReplayLLM,
  AsyncStreamingAgent,
  AsyncStreamingFunctionCallingAgent,
  FunctionCallingAgent,
  MemoryStore,
} from 'lagent-ts';
import {
  AsyncMockLLM,
  type FakeAnthropicServer,
  type FakeOpenAIServer,
  MockLLM,
  startFakeAnthropic,
  startFakeOpenAI,
} from 'lagent-ts/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { fakeSignature } from '#src/testing/fake-checks';
import { dyingStore } from '../helpers/durable';
import { calculator } from '../helpers/tools';

const FAST = { retry: 0, timeout: 5_000 };

let openai: FakeOpenAIServer | undefined;
let anthropic: FakeAnthropicServer | undefined;
afterEach(async () => {
  await openai?.close();
  await anthropic?.close();
  openai = undefined;
  anthropic = undefined;
});

async function collect(stream: AsyncIterable<StreamChunk>): Promise<StreamChunk[]> {
  const chunks: StreamChunk[] = [];
  for await (const chunk of stream) chunks.push(chunk);
  return chunks;
}

describe('Claude extended thinking with tools', () => {
  const thinking = 'The user wants 2 + 3; the calculator adds.';

  it('turns thinking on, keeps the signed thinking block and starts the next request with it', async () => {
    anthropic = await startFakeAnthropic({
      script: [
        { thinking, toolCalls: [{ id: 'toolu_1', name: 'Calculator__add', arguments: { a: 2, b: 3 } }] },
        { thinking: 'The tool said 5.', content: 'It is 5.' },
      ],
    });
    const llm = new AsyncClaudeAPI({
      model: 'claude-sonnet-4-5',
      apiKey: 'k',
      baseURL: anthropic.url,
      reasoning: { budgetTokens: 2048 },
      ...FAST,
    });
    const agent = new AsyncFunctionCallingAgent({ llm, actions: [calculator] });
    const reply = await agent.call('What is 2 + 3?');
    expect(reply.content).toBe('It is 5.');
    expect(reply.extraInfo).toMatchObject({ reasoning: 'The tool said 5.' });

    const [first, second] = anthropic.requests.map((request) => request.body);
    expect(first.thinking).toEqual({ type: 'enabled', budget_tokens: 2048 });
    expect(first.temperature).toBeUndefined();
    expect(first.max_tokens).toBeGreaterThan(2048);
    // The turn that called the tool goes back starting with the same thinking block, signature intact.
    const assistant = second.messages.find((message: { role: string }) => message.role === 'assistant');
    expect(assistant.content[0]).toEqual({
      type: 'thinking',
      thinking,
      signature: fakeSignature('thinking', thinking),
    });
    expect(assistant.content[1]).toMatchObject({ type: 'tool_use', id: 'toolu_1', name: 'Calculator__add' });
    expect(anthropic.requests.every((request) => request.aborted !== true)).toBe(true);
  });

  it('does the same when streaming, with the thinking streamed as reasoning deltas', async () => {
    anthropic = await startFakeAnthropic({
      script: [
        {
          thinking,
          chunkSize: 5,
          toolCalls: [{ id: 'toolu_1', name: 'Calculator__add', arguments: { a: 2, b: 3 } }],
        },
        { content: 'It is 5.' },
      ],
    });
    const llm = new AsyncClaudeAPI({
      model: 'claude-sonnet-4-5',
      apiKey: 'k',
      baseURL: anthropic.url,
      reasoning: { effort: 'low' },
      ...FAST,
    });
    const agent = new AsyncStreamingFunctionCallingAgent({ llm, actions: [calculator] });
    const deltas: string[] = [];
    let final: AgentMessage | undefined;
    for await (const chunk of agent.call('What is 2 + 3?')) {
      if (chunk.reasoningDelta) deltas.push(chunk.reasoningDelta);
      final = chunk;
    }
    expect(final?.content).toBe('It is 5.');
    expect(deltas.join('')).toBe(thinking);
    expect(deltas.length).toBe(Math.ceil(thinking.length / 5));
    const second = anthropic.requests[1]!.body;
    const assistant = second.messages.find((message: { role: string }) => message.role === 'assistant');
    expect(assistant.content[0]).toEqual({
      type: 'thinking',
      thinking,
      signature: fakeSignature('thinking', thinking),
    });
    expect(anthropic.requests[0]!.body.thinking).toEqual({ type: 'enabled', budget_tokens: 2048 });
  });

  it('keeps redacted thinking and sends it back as it came', async () => {
    anthropic = await startFakeAnthropic({
      script: [
        {
          redactedThinking: 'EncryptedBlob',
          toolCalls: [{ id: 'toolu_1', name: 'Calculator__add', arguments: { a: 1, b: 1 } }],
        },
        'Two.',
      ],
    });
    const llm = new AsyncClaudeAPI({
      apiKey: 'k',
      baseURL: anthropic.url,
      reasoning: { budgetTokens: 1024 },
      ...FAST,
    });
    const agent = new AsyncFunctionCallingAgent({ llm, actions: [calculator] });
    expect((await agent.call('1 + 1?')).content).toBe('Two.');
    const assistant = anthropic.requests[1]!.body.messages.find(
      (message: { role: string }) => message.role === 'assistant',
    );
    expect(assistant.content[0].type).toBe('redacted_thinking');
    expect(assistant.content[0].data).toMatch(/^EncryptedBlob\./);
  });
});

describe('DeepSeek reasoning_content', () => {
  it('keeps the reasoning on the reply and never sends it back in a later turn', async () => {
    openai = await startFakeOpenAI({
      script: [
        { reasoning: 'Count the r letters: three.', content: 'There are 3.' },
        { reasoning: 'Easy.', content: 'Yes.' },
      ],
    });
    const llm = new AsyncGPTAPI({
      model: 'deepseek-reasoner',
      apiKey: 'k',
      baseURL: openai.baseURL,
      ...FAST,
    });
    const agent = new AsyncAgent({ llm });
    const reply = await agent.call('How many r in strawberry?');
    expect(reply.content).toBe('There are 3.');
    expect(reply.extraInfo).toEqual({ reasoning: 'Count the r letters: three.' });
    // Lagent's shape keeps it as extra_info.reasoning, never inside content.
    expect(reply.toJSON({ format: 'lagent' }).extra_info).toEqual({
      reasoning: 'Count the r letters: three.',
    });
    await agent.call('Sure?');
    const messages = openai.requests[1]!.body.messages;
    expect(messages).toEqual([
      { role: 'user', content: 'How many r in strawberry?' },
      { role: 'assistant', content: 'There are 3.' },
      { role: 'user', content: 'Sure?' },
    ]);
    expect(JSON.stringify(openai.requests[1]!.body)).not.toContain('three');
  });

  it('reads Groq and OpenRouter `reasoning`, whole and streamed', async () => {
    openai = await startFakeOpenAI({
      script: [
        { reasoning: 'Think first.', reasoningField: 'reasoning', content: 'Done.' },
        { reasoning: 'Think first.', reasoningField: 'reasoning', content: 'Done.', chunkSize: 3 },
      ],
    });
    const llm = new AsyncGPTAPI({ model: 'qwen/qwen3-32b', apiKey: 'k', baseURL: openai.baseURL, ...FAST });
    const reply = await llm.generate([{ role: 'user', content: 'hi' }]);
    expect(reply).toMatchObject({ content: 'Done.', reasoning: 'Think first.' });
    const chunks = await collect(llm.streamChat([{ role: 'user', content: 'hi' }]));
    expect(chunks.map((chunk) => chunk.reasoningDelta ?? '').join('')).toBe('Think first.');
    expect(chunks.at(-1)).toMatchObject({ content: 'Done.', reasoning: 'Think first.' });
  });

  it('sends the reasoning of the current tool loop back when asked (DeepSeek thinking mode with tools)', async () => {
    openai = await startFakeOpenAI({
      script: [
        {
          reasoning: 'Use the calculator.',
          toolCalls: [{ id: 'call_1', name: 'Calculator__add', arguments: { a: 2, b: 2 } }],
        },
        'Four.',
        'Bye.',
      ],
    });
    const llm = new AsyncGPTAPI({
      model: 'deepseek-reasoner',
      apiKey: 'k',
      baseURL: openai.baseURL,
      reasoningInToolLoops: true,
      ...FAST,
    });
    const agent = new AsyncFunctionCallingAgent({ llm, actions: [calculator] });
    await agent.call('2 + 2?');
    const loop = openai.requests[1]!.body.messages;
    expect(loop[1]).toMatchObject({ role: 'assistant', reasoning_content: 'Use the calculator.' });
    await agent.call('Thanks');
    // A new user turn: the earlier turn's reasoning stays out.
    expect(JSON.stringify(openai.requests[2]!.body)).not.toContain('reasoning_content');
  });
});

/** Chat completion chunks shaped like DeepSeek's recorded reasoning stream (role, reasoning pieces, text, usage). */
function deepSeekStyleEvents(reasoning: string[], text: string[]): string[] {
  const base = { id: 'rec-1', object: 'chat.completion.chunk', created: 1, model: 'deepseek-reasoner' };
  const event = (delta: Record<string, unknown>, finish: string | null = null, usage: unknown = null) =>
    JSON.stringify({ ...base, choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }], usage });
  return [
    event({ role: 'assistant', content: null, reasoning_content: '' }),
    ...reasoning.map((piece) => event({ content: null, reasoning_content: piece })),
    ...text.map((piece) => event({ content: piece, reasoning_content: null })),
    event({ content: '', reasoning_content: null }, 'stop', {
      prompt_tokens: 18,
      completion_tokens: 40,
      total_tokens: 58,
      prompt_tokens_details: { cached_tokens: 0 },
      completion_tokens_details: { reasoning_tokens: 30 },
      prompt_cache_hit_tokens: 0,
      prompt_cache_miss_tokens: 18,
    }),
    '[DONE]',
  ];
}

describe('a streamed reasoning sequence', () => {
  it('yields the recorded reasoning pieces one for one, then the text, and the whole on END', async () => {
    const reasoning = ['We', ' need', ' to', ' count', ' the', ' r', "'s", '.', '\n\n', 'Three', '.'];
    const text = ['There', ' are', ' 3', '.'];
    openai = await startFakeOpenAI({ script: { events: deepSeekStyleEvents(reasoning, text) } });
    const llm = new AsyncGPTAPI({
      model: 'deepseek-reasoner',
      apiKey: 'k',
      baseURL: openai.baseURL,
      ...FAST,
    });
    const chunks = await collect(llm.streamChat([{ role: 'user', content: 'r in strawberry?' }]));
    expect(
      chunks.filter((chunk) => chunk.reasoningDelta !== undefined).map((chunk) => chunk.reasoningDelta),
    ).toEqual(reasoning);
    expect(chunks.filter((chunk) => chunk.delta !== '').map((chunk) => chunk.delta)).toEqual(text);
    expect(chunks.at(-1)).toMatchObject({ content: 'There are 3.', reasoning: reasoning.join('') });
    expect(llm.getLastUsage()).toEqual({
      promptTokens: 18,
      completionTokens: 40,
      totalTokens: 58,
      reasoningTokens: 30,
    });
  });

  it('reaches a streaming agent as chunks with reasoningDelta, and the reply keeps the whole', async () => {
    openai = await startFakeOpenAI({ script: { reasoning: 'Let me see.', content: 'Seen.', chunkSize: 4 } });
    const llm = new AsyncGPTAPI({
      model: 'deepseek-reasoner',
      apiKey: 'k',
      baseURL: openai.baseURL,
      ...FAST,
    });
    const agent = new AsyncStreamingAgent({ llm });
    const chunks: AgentMessage[] = [];
    for await (const chunk of agent.call('look')) chunks.push(chunk);
    const reasoning = chunks.flatMap((chunk) => (chunk.reasoningDelta ? [chunk.reasoningDelta] : []));
    expect(reasoning).toEqual(['Let ', 'me s', 'ee.']);
    const final = chunks.at(-1)!;
    expect(final.content).toBe('Seen.');
    expect(final.extraInfo).toEqual({ reasoning: 'Let me see.' });
    expect(agent.memory?.get(0)?.getMemory().at(-1)?.extraInfo).toEqual({ reasoning: 'Let me see.' });
  });
});

describe('the Responses API with store: false', () => {
  it('carries its encrypted reasoning item into the next request of a tool loop', async () => {
    openai = await startFakeOpenAI({
      script: [
        {
          reasoning: 'Add with the tool.',
          toolCalls: [{ id: 'call_r1', name: 'Calculator__add', arguments: { a: 20, b: 22 } }],
        },
        { reasoning: 'Report it.', content: 'It is 42.' },
      ],
    });
    const llm = new AsyncOpenAIResponsesAPI({
      model: 'gpt-5-mini',
      apiKey: 'k',
      baseURL: openai.baseURL,
      reasoning: { effort: 'low' },
      ...FAST,
    });
    const agent = new AsyncFunctionCallingAgent({ llm, actions: [calculator] });
    const reply = await agent.call('20 + 22?');
    expect(reply.content).toBe('It is 42.');
    expect(reply.extraInfo).toMatchObject({ reasoning: 'Report it.' });

    const [first, second] = openai.requests.map((request) => request.body);
    expect(first).toMatchObject({
      store: false,
      include: ['reasoning.encrypted_content'],
      reasoning: { effort: 'low', summary: 'auto' },
    });
    expect(openai.requests[0]!.path).toBe('/v1/responses');
    const input = second.input as Record<string, unknown>[];
    const reasoningAt = input.findIndex((item) => item.type === 'reasoning');
    const callAt = input.findIndex((item) => item.type === 'function_call');
    expect(reasoningAt).toBeGreaterThanOrEqual(0);
    expect(reasoningAt).toBeLessThan(callAt);
    expect(input[reasoningAt]).toEqual({
      type: 'reasoning',
      id: 'rs_fake_1',
      summary: [{ type: 'summary_text', text: 'Add with the tool.' }],
      encrypted_content: fakeSignature('reasoning', 'rs_fake_1'),
    });
    expect(input[callAt]).toMatchObject({ call_id: 'call_r1', name: 'Calculator__add' });
    expect(input.at(-1)).toEqual({ type: 'function_call_output', call_id: 'call_r1', output: '42' });
  });

  it('streams reasoning summaries and function calls, and the loop still carries the item', async () => {
    openai = await startFakeOpenAI({
      script: [
        {
          reasoning: 'Add with the tool.',
          chunkSize: 3,
          toolCalls: [{ id: 'call_s1', name: 'Calculator__add', arguments: { a: 1, b: 2 } }],
        },
        { content: 'Three.', chunkSize: 2 },
      ],
    });
    const llm = new AsyncOpenAIResponsesAPI({
      model: 'gpt-5-mini',
      apiKey: 'k',
      baseURL: openai.baseURL,
      ...FAST,
    });
    const agent = new AsyncStreamingFunctionCallingAgent({ llm, actions: [calculator] });
    const deltas: string[] = [];
    let final: AgentMessage | undefined;
    for await (const chunk of agent.call('1 + 2?')) {
      if (chunk.reasoningDelta) deltas.push(chunk.reasoningDelta);
      final = chunk;
    }
    expect(final?.content).toBe('Three.');
    expect(deltas.join('')).toBe('Add with the tool.');
    const input = openai.requests[1]!.body.input as Record<string, unknown>[];
    expect(input.map((item) => item.type ?? item.role)).toEqual([
      'user',
      'reasoning',
      'function_call',
      'function_call_output',
    ]);
  });

  it('is refused by the API when the reasoning item is dropped (what the fake checks)', async () => {
    openai = await startFakeOpenAI({
      script: [
        {
          reasoning: 'Tool.',
          toolCalls: [{ id: 'call_x', name: 'Calculator__add', arguments: { a: 1, b: 1 } }],
        },
      ],
    });
    const llm = new AsyncOpenAIResponsesAPI({
      model: 'gpt-5-mini',
      apiKey: 'k',
      baseURL: openai.baseURL,
      ...FAST,
    });
    const first = await llm.generate([{ role: 'user', content: '1 + 1?' }], { tools: [calculator] });
    await expect(
      llm.generate(
        [
          { role: 'user', content: '1 + 1?' },
          { role: 'assistant', content: null, toolCalls: first.toolCalls },
          { role: 'tool', content: '2', toolCallId: 'call_x' },
        ],
        { tools: [calculator] },
      ),
    ).rejects.toThrow(/without its required 'reasoning' item/);
  });
});

describe('reasoning in durable calls', () => {
  it('a recovered call replays the journaled reply with its reasoning, which the next request carries', () => {
    const store = new MemoryStore();
    let dead = true;
    const replies = [
      {
        reasoning: 'I must add first.',
        toolCalls: [{ id: 'c1', name: 'Calculator.add', arguments: { a: 1, b: 2 } }],
      },
      'Three.',
    ];
    let index = 0;
    const first = new FunctionCallingAgent({
      llm: new MockLLM({
        responses: () => {
          const reply = replies[index++]!;
          if (index === 2 && dead) throw new Error('the process died');
          return reply;
        },
      }),
      actions: [calculator],
      durable: { store: dyingStore(store) }, // the process dies before it can record that the call failed
      name: 'adder',
    });
    expect(() => first.call('1 + 2?', { sessionId: 's' })).toThrow(/the process died/);
    dead = false;
    // Another process recovers the call: the first model step comes from the journal, reasoning included.
    const llm = new MockLLM({ responses: ['Three.'] });
    const second = new FunctionCallingAgent({
      llm,
      actions: [calculator],
      durable: { store },
      name: 'adder',
    });
    const [reply] = second.recover({ sessionId: 's' }) as AgentMessage[];
    expect(reply?.content).toBe('Three.');
    const assistant = llm.calls[0]!.messages.find((message) => message.role === 'assistant');
    expect(assistant).toMatchObject({ reasoning: 'I must add first.', toolCalls: [{ id: 'c1' }] });
  });
});

describe('reasoning through the model wrappers', () => {
  it('a recording replays the reasoning, whole and streamed, and a cache answers with it', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'lagent-reasoning-'));
    try {
      const file = join(dir, 'run.jsonl');
      const model = new AsyncMockLLM({
        responses: [
          { reasoning: 'Because.', content: 'Yes.' },
          { reasoning: 'Streamed thought.', content: 'No.' },
        ],
        chunkSize: 4,
      });
      const recorder = new AsyncRecordingLLM(model, { file });
      expect(await recorder.generate([{ role: 'user', content: 'a' }])).toMatchObject({
        reasoning: 'Because.',
      });
      const recorded = await collect(recorder.streamChat([{ role: 'user', content: 'b' }]));
      await recorder.flush();
      const replay = new AsyncReplayLLM({ file });
      expect(await replay.generate([{ role: 'user', content: 'a' }])).toMatchObject({
        content: 'Yes.',
        reasoning: 'Because.',
      });
      const replayed = await collect(replay.streamChat([{ role: 'user', content: 'b' }]));
      expect(replayed.map((chunk) => chunk.reasoningDelta ?? '')).toEqual(
        recorded.map((chunk) => chunk.reasoningDelta ?? ''),
      );
      expect(replayed.at(-1)?.reasoning).toBe('Streamed thought.');

      const cached = new AsyncCachedLLM(
        new AsyncMockLLM({ responses: [{ reasoning: 'Once.', content: 'Cached.' }] }),
      );
      await cached.generate([{ role: 'user', content: 'c' }]);
      expect(await cached.generate([{ role: 'user', content: 'c' }])).toMatchObject({ reasoning: 'Once.' });
      expect(cached.stats).toEqual({ hits: 1, misses: 1 });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
