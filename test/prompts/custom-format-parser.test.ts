import { AsyncAgent, ConfigurationError, CustomFormatParser, ParseError } from 'lagent-ts';
import { AsyncMockLLM } from 'lagent-ts/testing';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';

/** Lagent's own example (custom_parser.py): a default format and an "unknown" one. */
const DefaultFormat = z.object({
  name: z.string().describe("User's full name"),
  age: z.number().int().describe("User's age"),
});
const UnknownFormat = z.object({ title: z.string(), year: z.number().int() });

/** The reply of Lagent's example. */
const RESPONSE = `
    <!-- User's full name -->
    <name type="str">John Doe</name>
    <!-- User's age -->
    <age type="int">30</age>
    `;

function parseError(run: () => unknown): ParseError {
  try {
    run();
  } catch (error) {
    if (error instanceof ParseError) return error;
    throw error;
  }
  throw new Error('expected a ParseError');
}

describe('CustomFormatParser', () => {
  it("reads Lagent's example reply into the default format", () => {
    const parser = new CustomFormatParser({ schema: DefaultFormat, unknownSchema: UnknownFormat });
    expect(parser.parseResponse(RESPONSE)).toEqual({ name: 'John Doe', age: 30 });
  });

  it('renders each field as Lagent does: comment, tag with the Python type name, default as content', () => {
    const schema = z.object({
      name: z.string().describe("User's full name"),
      age: z.number().int().describe("User's age"),
      city: z.string().default('Paris'),
      score: z.number().optional(),
      admin: z.boolean().default(false),
      tags: z.array(z.string()).default([]),
    });
    const parser = new CustomFormatParser({ schema, template: 'Reply:\n```html\n{format}```' });
    const tags = [
      "<!-- User's full name -->",
      '<name type="str"></name>',
      "<!-- User's age -->",
      '<age type="int"></age>',
      '<city type="str">Paris</city>',
      '<score type="float"></score>',
      '<admin type="bool">False</admin>',
      '<tags type="list">[]</tags>',
      '',
    ].join('\n');
    expect(parser.formatSchema()).toBe(tags);
    expect(parser.formatInstruction()).toBe(`Reply:\n\`\`\`html\n${tags}\`\`\``);
  });

  it("fills Lagent's placeholders: {format} / {default_format} and {unknown_format}", () => {
    const parser = new CustomFormatParser({
      schema: DefaultFormat,
      unknownSchema: UnknownFormat,
      template: '如果了解该问题请按照一下格式回复\n{default_format}否则请回复\n{unknown_format}',
    });
    expect(parser.formatInstruction()).toBe(
      [
        '如果了解该问题请按照一下格式回复',
        "<!-- User's full name -->",
        '<name type="str"></name>',
        "<!-- User's age -->",
        '<age type="int"></age>',
        '否则请回复',
        '<title type="str"></title>',
        '<year type="int"></year>',
        '',
      ].join('\n'),
    );
    const plain = new CustomFormatParser({ schema: DefaultFormat, unknownSchema: UnknownFormat });
    expect(plain.formatInstruction()).toContain(plain.formatSchema());
    expect(plain.formatInstruction()).toContain(plain.formatSchema(UnknownFormat));
  });

  it('falls back to the unknown format when the reply does not fit the default one', () => {
    const parser = new CustomFormatParser({ schema: DefaultFormat, unknownSchema: UnknownFormat });
    expect(parser.parseResponse('<title>X</title><year>1999</year>')).toEqual({ title: 'X', year: 1999 });
    const error = parseError(() => parser.parseResponse('<title>X</title>'));
    expect(error.message).toMatch(/matches neither format: missing required field "name".*"year"/);
    expect(error.text).toBe('<title>X</title>');
  });

  it('converts tag text as pydantic does, keeps text as it is, and lets the last repeated tag win', () => {
    const schema = z.object({
      name: z.string(),
      age: z.number().int(),
      ok: z.boolean(),
      ratio: z.number(),
      list: z.array(z.number()),
    });
    const parser = new CustomFormatParser({ schema });
    const reply =
      '<name>\n A \n</name><age> +7 </age><ok>yes</ok><ratio>1e3</ratio><list>[1, 2]</list><extra>1</extra><age>8</age>';
    expect(parser.parseResponse(reply)).toEqual({
      name: '\n A \n',
      age: 8,
      ok: true,
      ratio: 1000,
      list: [1, 2],
    });
    expect(parseError(() => parser.parseResponse(reply.replace('yes', 'maybe'))).message).toMatch(
      /does not match the format: field "ok": expected boolean/,
    );
    expect(parseError(() => parser.parseResponse('no tags at all')).message).toMatch(
      /missing required field "name"/,
    );
  });

  it('formats a parsed value back to tags', () => {
    const parser = new CustomFormatParser({ schema: DefaultFormat });
    expect(parser.formatResponse({ name: 'John Doe', age: 30 })).toBe('<name>John Doe</name>\n<age>30</age>');
    expect(parser.parseResponse(parser.formatResponse({ name: 'Ada', age: 36 }))).toEqual({
      name: 'Ada',
      age: 36,
    });
  });

  it('refuses a schema that is not an object, naming the option', () => {
    expect(() => new CustomFormatParser({ schema: z.string() })).toThrow(ConfigurationError);
    expect(
      () => new CustomFormatParser({ schema: DefaultFormat, unknownSchema: 'x' as unknown as z.ZodString }),
    ).toThrow(/unknownSchema/);
  });

  it("as an agent's outputFormat, its instruction is in the system prompt and its value in formatted", async () => {
    const parser = new CustomFormatParser({ schema: DefaultFormat });
    const llm = new AsyncMockLLM({ responses: [RESPONSE] });
    const reply = await new AsyncAgent({ llm, template: 'Extract the user.', outputFormat: parser }).call(
      'John, 30',
    );
    expect(reply.formatted).toEqual({ name: 'John Doe', age: 30 });
    expect(llm.calls[0]!.messages[0]!.content).toBe(`Extract the user.\n\n${parser.formatInstruction()}`);
  });
});
