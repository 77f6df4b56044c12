import { createAnthropic } from '@ai-sdk/anthropic';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import type { AgentMessage, StreamChunk } from 'lagent-ts';
import { AsyncAISDKModel, AsyncFunctionCallingAgent, AsyncStreamingFunctionCallingAgent } from 'lagent-ts';
import {
  type FakeAnthropicServer,
  type FakeOpenAIServer,
  startFakeAnthropic,
  startFakeOpenAI,
} from 'lagent-ts/testing';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { fakeSignature } from '#src/testing/fake-checks';
import { calculator } from '../helpers/tools';
import { scriptedModel } from './ai-sdk-scripted-model';

const FAST = { retry: 0, timeout: 5_000 };
const thinking = 'Add them with the calculator.';

let anthropic: FakeAnthropicServer | undefined;
let openai: FakeOpenAIServer | undefined;
afterEach(async () => {
  await anthropic?.close();
  await openai?.close();
  anthropic = undefined;
  openai = undefined;
  vi.restoreAllMocks();
});

async function collect(stream: AsyncIterable<StreamChunk>): Promise<StreamChunk[]> {
  const chunks: StreamChunk[] = [];
  for await (const chunk of stream) chunks.push(chunk);
  return chunks;
}

function claude(server: FakeAnthropicServer) {
  return createAnthropic({ baseURL: `${server.url}/v1`, apiKey: 'k' })('claude-sonnet-4-5');
}

describe('AsyncAISDKModel and reasoning', () => {
  it('reads reasoning parts with their metadata and gives them back to the provider in a tool loop', async () => {
    anthropic = await startFakeAnthropic({
      script: [
        { thinking, toolCalls: [{ id: 'toolu_1', name: 'Calculator__add', arguments: { a: 2, b: 2 } }] },
        { thinking: 'Done.', content: 'Four.' },
      ],
    });
    const llm = new AsyncAISDKModel({ model: claude(anthropic), reasoning: { budgetTokens: 2048 }, ...FAST });
    const agent = new AsyncFunctionCallingAgent({ llm, actions: [calculator] });
    const reply = await agent.call('2 + 2?');
    expect(reply.content).toBe('Four.');
    expect(reply.extraInfo).toMatchObject({
      reasoning: 'Done.',
      reasoningParts: [
        {
          type: 'ai-sdk.reasoning',
          provider: 'anthropic.messages',
          text: 'Done.',
          providerMetadata: { anthropic: { signature: fakeSignature('thinking', 'Done.') } },
        },
      ],
    });
    const [first, second] = anthropic.requests.map((request) => request.body);
    expect(first.thinking).toEqual({ type: 'enabled', budget_tokens: 2048 });
    const assistant = second.messages.find((message: { role: string }) => message.role === 'assistant');
    expect(assistant.content[0]).toEqual({
      type: 'thinking',
      thinking,
      signature: fakeSignature('thinking', thinking),
    });
  });

  it('streams reasoning deltas and keeps the signature the stream sends with them', async () => {
    anthropic = await startFakeAnthropic({
      script: [
        {
          thinking,
          chunkSize: 6,
          toolCalls: [{ id: 'toolu_1', name: 'Calculator__add', arguments: { a: 2, b: 2 } }],
        },
        'Four.',
      ],
    });
    const llm = new AsyncAISDKModel({ model: claude(anthropic), reasoning: { effort: 'low' }, ...FAST });
    const agent = new AsyncStreamingFunctionCallingAgent({ llm, actions: [calculator] });
    const deltas: string[] = [];
    let final: AgentMessage | undefined;
    for await (const chunk of agent.call('2 + 2?')) {
      if (chunk.reasoningDelta) deltas.push(chunk.reasoningDelta);
      final = chunk;
    }
    expect(final?.content).toBe('Four.');
    expect(deltas.join('')).toBe(thinking);
    expect(anthropic.requests[0]!.body.thinking?.type).toBe('enabled');
    const assistant = anthropic.requests[1]!.body.messages.find(
      (message: { role: string }) => message.role === 'assistant',
    );
    expect(assistant.content[0]).toEqual({
      type: 'thinking',
      thinking,
      signature: fakeSignature('thinking', thinking),
    });
  });

  it("gives another provider's reasoning to no one", async () => {
    const model = scriptedModel([{ text: 'ok' }]);
    const llm = new AsyncAISDKModel({ model, ...FAST });
    await llm.chat([
      { role: 'user', content: 'hi' },
      {
        role: 'assistant',
        content: 'hello',
        reasoning: 'x',
        reasoningParts: [
          { type: 'anthropic.thinking', thinking: 'x', signature: 's' },
          { type: 'ai-sdk.reasoning', provider: 'other.chat', text: 'y' },
        ],
      },
      { role: 'user', content: 'again' },
    ]);
    expect(model.calls[0]!.prompt[1]).toEqual({
      role: 'assistant',
      content: [{ type: 'text', text: 'hello' }],
    });
  });
});

describe('AsyncAISDKModel streaming usage', () => {
  it('asks an @ai-sdk/openai-compatible model for usage when streaming, so budgets do not read 0', async () => {
    openai = await startFakeOpenAI({
      script: { content: 'counted', usage: { prompt_tokens: 9, completion_tokens: 2 } },
    });
    const model = createOpenAICompatible({ name: 'fake', baseURL: openai.baseURL, apiKey: 'k' }).chatModel(
      'm',
    );
    const llm = new AsyncAISDKModel({ model, ...FAST });
    await collect(llm.streamChat([{ role: 'user', content: 'hi' }]));
    expect(openai.requests[0]!.body.stream_options).toEqual({ include_usage: true });
    expect(llm.getLastUsage()).toEqual({ promptTokens: 9, completionTokens: 2, totalTokens: 11 });
  });

  it('says once why it cannot count a stream, and estimates the tokens instead', async () => {
    const warnings: string[] = [];
    vi.spyOn(process, 'emitWarning').mockImplementation(((message: string) => {
      warnings.push(String(message));
    }) as never);
    const model = scriptedModel(() => ({ text: 'no usage here' }));
    const llm = new AsyncAISDKModel({ model, ...FAST });
    await collect(llm.streamChat([{ role: 'user', content: 'hi' }]));
    await collect(llm.streamChat([{ role: 'user', content: 'hi' }]));
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(/reported no token usage for a streamed reply.*includeUsage: true/);
    const usage = llm.getLastUsage()!;
    expect(usage.promptTokens).toBeGreaterThan(0);
    expect(usage.completionTokens).toBeGreaterThan(0);
  });
});
