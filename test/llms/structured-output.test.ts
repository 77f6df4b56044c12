import { createAnthropic } from '@ai-sdk/anthropic';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import {
  Agent,
  AsyncAgent,
  AsyncAISDKModel,
  AsyncClaudeAPI,
  AsyncGPTAPI,
  AsyncOpenAIResponsesAPI,
  JSONParser,
  ParseError,
  strictJSONSchema,
} from 'lagent-ts';
import {
  type FakeAnthropicServer,
  type FakeOpenAIServer,
  MockLLM,
  startFakeAnthropic,
  startFakeOpenAI,
} from 'lagent-ts/testing';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { strictSchemaProblem } from '#src/testing/fake-checks';

const FAST = { retry: 0, timeout: 5_000 };

const Trip = z.object({
  city: z.string().min(1).describe('Where to'),
  days: z.number().int().default(3),
  tags: z.array(z.string()).optional(),
  hotel: z.object({ name: z.string(), stars: z.number().nullable() }).optional(),
  kind: z.enum(['work', 'leisure']),
});

const STRICT_TRIP = {
  type: 'object',
  properties: {
    city: { type: 'string', description: 'Where to (minLength: 1)' },
    days: { type: ['integer', 'null'] },
    tags: { anyOf: [{ type: 'array', items: { type: 'string' } }, { type: 'null' }] },
    hotel: {
      anyOf: [
        {
          type: 'object',
          properties: { name: { type: 'string' }, stars: { type: ['number', 'null'] } },
          required: ['name', 'stars'],
          additionalProperties: false,
        },
        { type: 'null' },
      ],
    },
    kind: { type: 'string', enum: ['work', 'leisure'] },
  },
  required: ['city', 'days', 'tags', 'hotel', 'kind'],
  additionalProperties: false,
};

describe('zod v4 to a strict JSON schema', () => {
  it('lists every property as required, closes every object, and makes optional fields nullable', () => {
    const strict = strictJSONSchema({ type: 'json', schema: Trip });
    expect(strict).toEqual({ name: 'response', schema: STRICT_TRIP, strict: true });
    expect(strictSchemaProblem(strict!.schema)).toBeUndefined();
    // The same schema object is converted once.
    expect(strictJSONSchema({ type: 'json', schema: Trip })).toBe(strict);
  });

  it('says when a schema cannot be strict (open-ended keys), and converts a plain JSON schema too', () => {
    expect(
      strictJSONSchema({ type: 'json', schema: z.object({ scores: z.record(z.string(), z.number()) }) }),
    ).toMatchObject({ strict: false });
    expect(
      strictJSONSchema({
        type: 'json',
        name: 'point',
        schema: { type: 'object', properties: { x: { type: 'number' } }, oneOf: [{ required: ['x'] }] },
      }),
    ).toEqual({
      name: 'point',
      strict: true,
      schema: {
        type: 'object',
        properties: { x: { type: ['number', 'null'] } },
        anyOf: [{ required: ['x'] }],
        required: ['x'],
        additionalProperties: false,
      },
    });
  });
});

let openai: FakeOpenAIServer;
let anthropic: FakeAnthropicServer;
const answer = JSON.stringify({
  city: 'Lyon',
  days: null,
  tags: null,
  hotel: { name: 'Ibis', stars: null },
  kind: 'work',
});
beforeAll(async () => {
  openai = await startFakeOpenAI({ script: answer });
  anthropic = await startFakeAnthropic({ script: answer });
});
afterAll(async () => {
  await openai.close();
  await anthropic.close();
});
afterEach(() => {
  openai.requests.length = 0;
  anthropic.requests.length = 0;
});

describe('JSONParser asks for native structured output and validates the reply', () => {
  const parsed = { city: 'Lyon', days: 3, hotel: { name: 'Ibis', stars: null }, kind: 'work' };

  it('OpenAI chat completions: a strict json_schema response format', async () => {
    const llm = new AsyncGPTAPI({ model: 'gpt-4o', apiKey: 'k', baseURL: openai.baseURL, ...FAST });
    const agent = new AsyncAgent({ llm, outputFormat: new JSONParser({ schema: Trip }) });
    const reply = await agent.call('Plan a work trip to Lyon');
    expect(reply.formatted).toEqual(parsed);
    expect(openai.requests[0]!.body.response_format).toEqual({
      type: 'json_schema',
      json_schema: { name: 'response', schema: STRICT_TRIP, strict: true },
    });
    // The instruction stays in the prompt for servers that ignore the format.
    expect(openai.requests[0]!.body.messages[0].content).toContain('Reply with a JSON object');
  });

  it('the Responses API: text.format', async () => {
    const llm = new AsyncOpenAIResponsesAPI({
      model: 'gpt-4.1',
      apiKey: 'k',
      baseURL: openai.baseURL,
      ...FAST,
    });
    const agent = new AsyncAgent({ llm, outputFormat: new JSONParser({ schema: Trip }) });
    expect((await agent.call('Plan')).formatted).toEqual(parsed);
    expect(openai.requests[0]!.body.text).toEqual({
      format: { type: 'json_schema', name: 'response', schema: STRICT_TRIP, strict: true },
    });
  });

  it('Anthropic: output_config.format', async () => {
    const llm = new AsyncClaudeAPI({ apiKey: 'k', baseURL: anthropic.url, ...FAST });
    const agent = new AsyncAgent({ llm, outputFormat: new JSONParser({ schema: Trip }) });
    expect((await agent.call('Plan')).formatted).toEqual(parsed);
    expect(anthropic.requests[0]!.body.output_config).toEqual({
      format: { type: 'json_schema', schema: STRICT_TRIP },
    });
  });

  it("an AI SDK model: the provider's own structured output", async () => {
    const claude = new AsyncAISDKModel({
      model: createAnthropic({ baseURL: `${anthropic.url}/v1`, apiKey: 'k' })('claude-sonnet-4-5'),
      ...FAST,
    });
    const agent = new AsyncAgent({ llm: claude, outputFormat: new JSONParser({ schema: Trip }) });
    expect((await agent.call('Plan')).formatted).toEqual(parsed);
    expect(anthropic.requests[0]!.body.output_config.format).toMatchObject({ type: 'json_schema' });
    const compatible = new AsyncAISDKModel({
      model: createOpenAICompatible({
        name: 'fake',
        baseURL: openai.baseURL,
        apiKey: 'k',
        supportsStructuredOutputs: true,
      }).chatModel('m'),
      ...FAST,
    });
    await new AsyncAgent({ llm: compatible, outputFormat: new JSONParser({ schema: Trip }) }).call('Plan');
    expect(openai.requests[0]!.body.response_format).toMatchObject({
      type: 'json_schema',
      json_schema: { name: 'response', schema: STRICT_TRIP },
    });
  });

  it('a reply that does not fit the schema is still a ParseError', async () => {
    openai.setScript(JSON.stringify({ city: '', days: null, tags: null, hotel: null, kind: 'holiday' }));
    try {
      const llm = new AsyncGPTAPI({ model: 'gpt-4o', apiKey: 'k', baseURL: openai.baseURL, ...FAST });
      const agent = new AsyncAgent({ llm, outputFormat: new JSONParser({ schema: Trip }) });
      const error = await agent.call('Plan').catch((caught: unknown) => caught);
      expect(error).toBeInstanceOf(ParseError);
      expect((error as Error).message).toMatch(/city|kind/);
    } finally {
      openai.setScript(answer);
    }
  });

  it('a responseFormat call option works without a parser, and structuredOutput: false sends none', async () => {
    const llm = new AsyncGPTAPI({ model: 'gpt-4o', apiKey: 'k', baseURL: openai.baseURL, ...FAST });
    await llm.generate([{ role: 'user', content: 'Plan' }], {
      responseFormat: { type: 'json', schema: Trip },
    });
    expect(openai.requests[0]!.body.response_format.type).toBe('json_schema');
    const agent = new AsyncAgent({
      llm,
      outputFormat: new JSONParser({ schema: Trip, structuredOutput: false }),
    });
    await agent.call('Plan');
    expect(openai.requests[1]!.body.response_format).toBeUndefined();
  });

  it('a schema the strict mode refuses is refused by the fake as by OpenAI (what keeps the conversion honest)', async () => {
    const llm = new AsyncGPTAPI({
      model: 'gpt-4o',
      apiKey: 'k',
      baseURL: openai.baseURL,
      extraBody: {
        response_format: {
          type: 'json_schema',
          json_schema: {
            name: 'loose',
            strict: true,
            schema: { type: 'object', properties: { a: { type: 'string' } } },
          },
        },
      },
      ...FAST,
    });
    await expect(llm.chat([{ role: 'user', content: 'x' }])).rejects.toThrow(
      /'additionalProperties' is required to be supplied and to be false/,
    );
  });

  it('models without native structured output keep the instruction and the same validation', () => {
    const llm = new MockLLM({ responses: ['```json\n{"city": "Oslo", "kind": "leisure"}\n```'] });
    const agent = new Agent({ llm, outputFormat: new JSONParser({ schema: Trip }) });
    expect(agent.call('Plan').formatted).toEqual({ city: 'Oslo', days: 3, kind: 'leisure' });
    expect(llm.calls[0]!.messages[0]!.content).toContain('Reply with a JSON object');
  });
});
