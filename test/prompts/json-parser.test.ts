import { Agent, AsyncAgent, AsyncStreamingAgent, JSONParser, ParseError } from 'lagent-ts';
import { AsyncMockLLM, MockLLM } from 'lagent-ts/testing';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';

const schema = z.object({
  name: z.string().describe('Full name'),
  age: z.number().int().default(30),
  tags: z.array(z.string()).optional(),
  address: z.object({ city: z.string().describe('City') }),
});

function parseError(run: () => unknown): ParseError {
  try {
    run();
  } catch (error) {
    if (error instanceof ParseError) return error;
    throw error;
  }
  throw new Error('expected a ParseError');
}

describe('JSONParser', () => {
  const parser = new JSONParser({ schema });

  it('describes the schema as commented pseudo-JSON', () => {
    expect(parser.formatSchema()).toBe(
      [
        '{',
        '    // Full name',
        '    "name": "string",  // required',
        '    "age": "integer",  // default: 30',
        '    "tags": "string[]",  // optional',
        '    "address": {',
        '        // City',
        '        "city": "string"  // required',
        '    }',
        '}',
      ].join('\n'),
    );
    expect(parser.formatInstruction()).toContain(parser.formatSchema());
    expect(new JSONParser({ schema, template: 'Format:\n{format}' }).formatInstruction()).toBe(
      `Format:\n${parser.formatSchema()}`,
    );
  });

  it('parses well-formed output, applying defaults', () => {
    expect(parser.parseResponse('{"name": "Ada", "address": {"city": "London"}}')).toEqual({
      name: 'Ada',
      age: 30,
      address: { city: 'London' },
    });
  });

  it('strips fences, // comments and trailing commas', () => {
    const text = [
      'Here you go:',
      '```json',
      '{',
      '  // the person',
      '  "name": "Ada",  // required',
      '  "address": {"city": "https://x//y",},',
      '}',
      '```',
      'Anything else?',
    ].join('\n');
    expect(parser.parseResponse(text)).toEqual({ name: 'Ada', age: 30, address: { city: 'https://x//y' } });
  });

  it('accepts a fence cut off by a stop word, and JSON inside prose', () => {
    expect(parser.parseResponse('```json\n{"name": "A", "address": {"city": "B"}}')).toMatchObject({
      name: 'A',
    });
    expect(parser.parseResponse('Sure: {"name": "A", "address": {"city": "B"}} hope it helps')).toMatchObject(
      {
        name: 'A',
      },
    );
  });

  it('treats a copied type placeholder as not filled in', () => {
    expect(parser.parseResponse('{"name": "A", "age": "integer", "address": {"city": "B"}}').age).toBe(30);
  });

  it('says which field is missing or wrong', () => {
    const error = parseError(() => parser.parseResponse('{"name": 1}'));
    expect(error.message).toContain('field "name": expected string, received number');
    expect(error.message).toContain('missing required field "address"');
    expect(error.text).toBe('{"name": 1}');
  });

  it('throws a ParseError for garbage and partial JSON', () => {
    expect(parseError(() => parser.parseResponse('no json here')).message).toMatch(/not valid JSON/);
    expect(parseError(() => parser.parseResponse('{"name": "A", "addr')).message).toMatch(/not valid JSON/);
    expect(parseError(() => parser.parseResponse('')).message).toMatch(/not valid JSON/);
  });

  it('formats a parsed value back to JSON', () => {
    const value = parser.parseResponse('{"name": "数学", "address": {"city": "🚀"}}');
    expect(parser.parseResponse(parser.formatResponse(value))).toEqual(value);
  });
});

describe('JSONParser as an agent outputFormat', () => {
  const schema = z.object({ city: z.string().describe('City name') });
  const reply = '{"city": "Paris"}';

  it('puts its format instruction into the system prompt the model receives', async () => {
    const parser = new JSONParser({ schema });
    const llm = new AsyncMockLLM({ responses: [reply] });
    const agent = new AsyncAgent({ llm, template: 'You are a travel agent.', outputFormat: parser });
    const message = await agent.call('Where to?');
    expect(message.formatted).toEqual({ city: 'Paris' });
    expect(llm.calls[0]!.messages[0]).toEqual({
      role: 'system',
      content: `You are a travel agent.\n\n${parser.formatInstruction()}`,
    });
    expect(llm.calls[0]!.messages[1]).toEqual({ role: 'user', content: 'Where to?' });
  });

  it('adds a system message when the agent has no template, in every variant', async () => {
    const parser = new JSONParser({ schema });
    const sync = new MockLLM({ responses: [reply] });
    new Agent({ llm: sync, outputFormat: parser }).call('hi');
    const streaming = new AsyncMockLLM({ responses: [reply] });
    const agent = new AsyncStreamingAgent({ llm: streaming, outputFormat: parser });
    for await (const _ of agent.call('hi')) {
      // drain
    }
    for (const llm of [sync, streaming]) {
      expect(llm.calls[0]!.messages[0]).toEqual({ role: 'system', content: parser.formatInstruction() });
    }
  });

  it('is not added twice when the template already holds it (Lagent style), nor when turned off', async () => {
    const parser = new JSONParser({ schema });
    const llm = new AsyncMockLLM({ responses: [reply, reply] });
    const template = `Plan a trip.\n${parser.formatInstruction()}`;
    await new AsyncAgent({ llm, template, outputFormat: parser }).call('hi');
    expect(llm.calls[0]!.messages[0]).toEqual({ role: 'system', content: template });
    const quiet = new JSONParser({ schema, addsFormatInstruction: false });
    await new AsyncAgent({ llm, outputFormat: quiet }).call('hi');
    expect(llm.calls[1]!.messages).toEqual([{ role: 'user', content: 'hi' }]);
  });
});
