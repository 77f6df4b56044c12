import type { ChatMessage, ContentPart, StreamChunk } from 'lagent-ts';
import { asyncTool, asyncToolkit, LLMRequestError, ModelStatusCode } from 'lagent-ts';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { recordTimerDelays } from '../../helpers/timer-delays';
import type { ConformanceTarget, Harness } from './targets';

const user = (content: string): ChatMessage[] => [{ role: 'user', content }];

/** A 1x1 PNG and the smallest PDF, as data: URLs. */
const PNG_URL =
  'data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==';
const PDF_URL = `data:application/pdf;base64,${Buffer.from('%PDF-1.1\n%%EOF\n').toString('base64')}`;

const weather = asyncTool({
  name: 'weather',
  description: 'The weather in a city.',
  parameters: z.object({ city: z.string() }),
  run: async ({ city }) => `sunny in ${city}`,
});

const maps = asyncToolkit({
  name: 'Maps',
  description: 'Maps.',
  apis: {
    distance: {
      description: 'Distance between two cities.',
      parameters: z.object({ from: z.string(), to: z.string() }),
      run: async () => 42,
    },
  },
});

async function collect(stream: AsyncIterable<StreamChunk>): Promise<StreamChunk[]> {
  const chunks: StreamChunk[] = [];
  for await (const chunk of stream) chunks.push(chunk);
  return chunks;
}

async function failure(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error('expected a failure');
}

/**
 * The behaviour every model client shares: text, streaming, native function calling (parallel calls, tool
 * results sent back), stop words, abort mid-stream, token usage and errors (401, 429 with retry-after, 500,
 * malformed bodies and events); reasoning (whole, streamed, given back in a tool loop), image and file parts,
 * native structured output, and prompt caching.
 */
export function conformanceSuite(target: ConformanceTarget): void {
  describe(`model conformance: ${target.name}`, () => {
    let harness: Harness;

    beforeEach(async () => {
      harness = await target.start({ retry: 1 });
    });

    afterEach(async () => {
      await harness.close();
    });

    it('answers with text and sends the dialog', async () => {
      harness.script({ content: 'Hello there!' });
      const text = await harness.llm.chat([
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'hi' },
      ]);
      expect(text).toBe('Hello there!');
      const [request] = harness.requests();
      expect(request?.stream).toBe(false);
      expect(request?.userTexts).toEqual(['hi']);
    });

    it('streams cumulative chunks and one END chunk', async () => {
      harness.script({ content: 'streamed reply text', chunkSize: 3 });
      const chunks = await collect(harness.llm.streamChat(user('hi')));
      const end = chunks.at(-1);
      expect(end?.state).toBe(ModelStatusCode.END);
      expect(end?.content).toBe('streamed reply text');
      const streaming = chunks.slice(0, -1);
      expect(streaming.length).toBeGreaterThan(2);
      expect(streaming.every((chunk) => chunk.state === ModelStatusCode.STREAM_ING)).toBe(true);
      expect(streaming.map((chunk) => chunk.delta).join('')).toBe('streamed reply text');
      expect(streaming.at(-1)?.content).toBe('streamed reply text');
      expect(harness.requests()[0]?.stream).toBe(true);
    });

    it('offers tools and returns a tool call with Lagent names and parsed arguments', async () => {
      harness.script({
        toolCalls: [{ id: 'c1', name: 'Maps__distance', arguments: { from: 'A', to: 'B' } }],
      });
      const reply = await harness.llm.generate(user('how far?'), { tools: [weather, maps] });
      expect(reply.toolCalls).toEqual([
        { id: 'c1', name: 'Maps.distance', arguments: { from: 'A', to: 'B' } },
      ]);
      expect(reply.finishReason).toBe('tool_calls');
      expect(harness.requests()[0]?.toolNames).toEqual(['weather', 'Maps__distance']);
      await expect(harness.llm.chat(user('again'), { tools: [weather] })).rejects.toThrow(/tool call/);
    });

    it('sends tool calls and their results back', async () => {
      harness.script({ content: 'It is sunny.' });
      const text = await harness.llm.chat(
        [
          { role: 'user', content: 'weather in Paris and distance?' },
          {
            role: 'assistant',
            content: '',
            toolCalls: [
              { id: 'c1', name: 'weather', arguments: { city: 'Paris' } },
              { id: 'c2', name: 'Maps.distance', arguments: '{"from":"A","to":"B"}' },
            ],
          },
          { role: 'tool', content: 'sunny in Paris', toolCallId: 'c1' },
          { role: 'tool', content: '42', toolCallId: 'c2' },
        ],
        { tools: [weather, maps] },
      );
      expect(text).toBe('It is sunny.');
      const [request] = harness.requests();
      expect(request?.toolCalls).toEqual([
        { id: 'c1', name: 'weather', arguments: { city: 'Paris' } },
        { id: 'c2', name: 'Maps__distance', arguments: { from: 'A', to: 'B' } },
      ]);
      expect(request?.toolResults).toEqual([
        { id: 'c1', content: 'sunny in Paris' },
        { id: 'c2', content: '42' },
      ]);
    });

    it('returns parallel tool calls in order, whole and streamed', async () => {
      const calls = [
        { id: 'p1', name: 'weather', arguments: { city: 'Paris' } },
        { id: 'p2', name: 'weather', arguments: { city: 'Rome' } },
      ];
      harness.script([{ toolCalls: calls }, { toolCalls: calls, chunkSize: 2 }]);
      const reply = await harness.llm.generate(user('two cities'), { tools: [weather] });
      expect(reply.toolCalls).toEqual(calls);
      const chunks = await collect(harness.llm.streamChat(user('two cities'), { tools: [weather] }));
      const end = chunks.at(-1);
      expect(end?.state).toBe(ModelStatusCode.END);
      expect(end?.toolCalls).toEqual(calls);
    });

    it('sends stop words and never returns text after one, even when the server ignores them', async () => {
      harness.script({ content: 'Thought: go\nObservation: secret', ignoreStop: true, chunkSize: 2 });
      const text = await harness.llm.chat(user('go'), { stopWords: ['Observation:'] });
      expect(text).toBe('Thought: go\n');
      expect(harness.requests()[0]?.stopWords).toEqual(target.sendsStopWords ? ['Observation:'] : []);
      const chunks = await collect(harness.llm.streamChat(user('go'), { stopWords: 'Observation:' }));
      expect(chunks.at(-1)?.content).toBe('Thought: go\n');
      expect(chunks.map((chunk) => chunk.delta).join('')).not.toContain('secret');
    });

    it('stops a stream when aborted mid-way, and the server sees the request end', async () => {
      harness.script({ content: 'x'.repeat(400), chunkSize: 1, chunkDelayMs: 10 });
      const controller = new AbortController();
      const reason = new Error('stop now');
      const seen: StreamChunk[] = [];
      const error = await failure(
        (async () => {
          for await (const chunk of harness.llm.streamChat(user('go'), { signal: controller.signal })) {
            seen.push(chunk);
            if (seen.length === 3) controller.abort(reason);
          }
        })(),
      );
      expect(error).toBe(reason);
      expect(seen.length).toBe(3);
      await expect.poll(() => harness.requests()[0]?.aborted, { timeout: 2_000 }).toBe(true);
    });

    it('counts token usage per call and per session, whole and streamed', async () => {
      harness.script([
        { content: 'one', usage: { input: 11, output: 7 } },
        { content: 'two', usage: { input: 5, output: 3 } },
      ]);
      harness.llm.resetUsage();
      await harness.llm.chat(user('a'), { sessionId: 's1' });
      expect(harness.llm.getLastUsage()).toEqual({ promptTokens: 11, completionTokens: 7, totalTokens: 18 });
      await collect(harness.llm.streamChat(user('b'), { sessionId: 's1' }));
      expect(harness.llm.getLastUsage()).toEqual({ promptTokens: 5, completionTokens: 3, totalTokens: 8 });
      expect(harness.llm.getUsage('s1')).toEqual({ promptTokens: 16, completionTokens: 10, totalTokens: 26 });
      expect(harness.llm.getUsage('other')).toEqual({ promptTokens: 0, completionTokens: 0, totalTokens: 0 });
    });

    it('fails a 401 at once, without retrying', async () => {
      harness.script([{ status: 401, error: 'bad key' }, { content: 'never' }]);
      const error = await failure(harness.llm.chat(user('hi')));
      expect(error).toBeInstanceOf(LLMRequestError);
      expect(error).toMatchObject({ status: 401, retryable: false, attempts: 1 });
      expect((error as Error).message).toContain('bad key');
      expect(harness.requests()).toHaveLength(1);
    });

    it('retries a 429 after the server asks, then answers', async () => {
      harness.script([{ status: 429, headers: { 'retry-after-ms': '20' } }, { content: 'recovered' }]);
      const timers = recordTimerDelays();
      try {
        expect(await harness.llm.chat(user('hi'))).toBe('recovered');
      } finally {
        timers.stop();
      }
      // It waited what the server asked for.
      expect(timers.delays).toContain(20);
      expect(harness.requests()).toHaveLength(2);
    });

    it('gives up on a lasting 500 after its retries', async () => {
      harness.script({ status: 500, error: 'down' });
      const error = await failure(harness.llm.chat(user('hi')));
      expect(error).toBeInstanceOf(LLMRequestError);
      expect(error).toMatchObject({ status: 500, retryable: true, attempts: 2 });
      expect(harness.requests()).toHaveLength(2);
      const streamed = await failure(collect(harness.llm.streamChat(user('hi'))));
      expect(streamed).toMatchObject({ status: 500, attempts: 2 });
    });

    it("returns the model's reasoning apart from the text, whole and streamed", async () => {
      const thought = 'First count the letters, then answer.';
      harness.script([
        { reasoning: thought, content: 'Three.' },
        { reasoning: thought, content: 'Three.', chunkSize: 5 },
      ]);
      const thinking = { reasoning: { budgetTokens: 1024 } };
      const reply = await harness.llm.generate(user('how many?'), thinking);
      expect(reply.content).toBe('Three.');
      expect(reply.reasoning).toBe(thought);
      const chunks = await collect(harness.llm.streamChat(user('how many?'), thinking));
      const deltas = chunks.flatMap((chunk) => (chunk.reasoningDelta ? [chunk.reasoningDelta] : []));
      expect(deltas.length).toBeGreaterThan(1);
      expect(deltas.join('')).toBe(thought);
      expect(chunks.at(-1)).toMatchObject({ content: 'Three.', reasoning: thought });
      // Reasoning chunks come before the text and never add to it.
      const firstText = chunks.findIndex((chunk) => chunk.delta !== '');
      const lastThought = chunks.findLastIndex((chunk) => chunk.reasoningDelta !== undefined);
      expect(lastThought).toBeLessThan(firstText);
    });

    it('gives the reasoning of a tool call back as the API requires, and the next request is accepted', async () => {
      harness.script([
        {
          reasoning: 'Ask the weather tool.',
          toolCalls: [{ id: 'r1', name: 'weather', arguments: { city: 'Oslo' } }],
        },
        { content: 'Sunny.' },
      ]);
      const thinking = { reasoning: { budgetTokens: 1024 }, tools: [weather] };
      const first = await harness.llm.generate(user('weather?'), thinking);
      expect(first.reasoning).toBe('Ask the weather tool.');
      const second = await harness.llm.generate(
        [
          { role: 'user', content: 'weather?' },
          {
            role: 'assistant',
            content: null,
            toolCalls: first.toolCalls,
            reasoning: first.reasoning,
            reasoningParts: first.reasoningParts,
          },
          { role: 'tool', content: 'sunny in Oslo', toolCallId: 'r1' },
        ],
        thinking,
      );
      expect(second.content).toBe('Sunny.');
      expect(harness.requests()[1]?.toolResults).toEqual([{ id: 'r1', content: 'sunny in Oslo' }]);
    });

    it('sends an image (and a PDF where the API takes files) in its own shape', async () => {
      harness.script({ content: 'A red pixel.' });
      const parts: ContentPart[] = [
        { type: 'text', text: 'What is this?' },
        { type: 'image', image: PNG_URL },
      ];
      if (target.takesFiles)
        parts.push({ type: 'file', data: PDF_URL, mediaType: 'application/pdf', filename: 'a.pdf' });
      expect(await harness.llm.chat([{ role: 'user', content: 'What is this?', parts }])).toBe(
        'A red pixel.',
      );
      const [request] = harness.requests();
      expect(request?.images).toBe(1);
      expect(request?.files).toBe(target.takesFiles ? 1 : 0);
      expect(request?.userTexts.join('')).toContain('What is this?');
    });

    it('asks for native structured output with a strict schema', async () => {
      harness.script({ content: '{"city":"Oslo","days":null}' });
      const schema = z.object({ city: z.string(), days: z.number().optional() });
      const reply = await harness.llm.generate(user('trip?'), { responseFormat: { type: 'json', schema } });
      expect(JSON.parse(reply.content)).toEqual({ city: 'Oslo', days: null });
      const sent = harness.requests()[0]?.schema;
      expect(sent).toMatchObject({ type: 'object', additionalProperties: false, required: ['city', 'days'] });
    });

    it('reports cached prompt tokens (and marks the prefix where the API asks for it)', async () => {
      harness.script({ content: 'cached', usage: { input: 2048, output: 4, cached: 1536 } });
      harness.llm.resetUsage();
      await harness.llm.chat([
        { role: 'system', content: 'A long, stable system prompt.' },
        { role: 'user', content: 'hi' },
      ]);
      expect(harness.llm.getLastUsage()).toMatchObject({
        promptTokens: 2048,
        completionTokens: 4,
        cachedPromptTokens: 1536,
      });
      const marks = harness.requests()[0]?.cacheMarks ?? 0;
      if (target.marksCache) expect(marks).toBeGreaterThanOrEqual(2);
      else expect(marks).toBe(0);
    });

    it('fails a malformed body or stream event with LLMRequestError, without retrying', async () => {
      harness.script([{ malformed: 'body' }, { malformed: 'event' }]);
      const error = await failure(harness.llm.chat(user('hi')));
      expect(error).toBeInstanceOf(LLMRequestError);
      expect(error).toMatchObject({ retryable: false, attempts: 1 });
      const streamed = await failure(collect(harness.llm.streamChat(user('hi'))));
      expect(streamed).toBeInstanceOf(LLMRequestError);
      expect(streamed).toMatchObject({ retryable: false });
      expect(harness.requests()).toHaveLength(2);
    });
  });
}
