import {
  InterpreterParser,
  JSONParser,
  MixedToolParser,
  type OutputParser,
  PluginParser,
  StrParser,
  ToolParser,
  type ToolResponse,
} from 'lagent-ts';
import { describe, expectTypeOf, it } from 'vitest';
import { z } from 'zod';

describe('parser result types', () => {
  it('JSONParser parses to the schema output', () => {
    const parser = new JSONParser({ schema: z.object({ city: z.string(), days: z.number().default(1) }) });
    expectTypeOf(parser.parseResponse('{}')).toEqualTypeOf<{ city: string; days: number }>();
    expectTypeOf(parser).toExtend<OutputParser<{ city: string; days: number }>>();
  });

  it('ToolParser gives a ToolResponse of the raw text, or of what validate returns', () => {
    expectTypeOf(new ToolParser({ toolType: 't' }).parseResponse('')).toEqualTypeOf<ToolResponse<string>>();
    const validated = new ToolParser({ toolType: 't', validate: (text) => ({ code: text }) });
    // A call that fails validation keeps its raw text.
    expectTypeOf(validated.parseResponse('')).toEqualTypeOf<ToolResponse<{ code: string } | string>>();
    expectTypeOf(validated).toEqualTypeOf<ToolParser<{ code: string }>>();
  });

  it('InterpreterParser, PluginParser and MixedToolParser likewise', () => {
    expectTypeOf(new InterpreterParser().parseResponse('')).toEqualTypeOf<ToolResponse<string>>();
    expectTypeOf(new PluginParser().parseResponse('')).toEqualTypeOf<ToolResponse<unknown>>();
    const mixed = new MixedToolParser({
      parsers: [new InterpreterParser(), new ToolParser({ toolType: 'n', validate: Number })],
    });
    expectTypeOf(mixed.parseResponse('')).toEqualTypeOf<
      ToolResponse<string> | ToolResponse<number | string>
    >();
    const response = mixed.parseResponse('');
    // @ts-expect-error thought is text
    const thought: number = response.thought;
    void thought;
  });

  it('StrParser stays open for subclasses', () => {
    expectTypeOf(new StrParser().parseResponse('')).toEqualTypeOf<unknown>();
    class Upper extends StrParser {
      override parseResponse(text: string): string {
        return text.toUpperCase();
      }
    }
    expectTypeOf(new Upper()).toExtend<OutputParser<string>>();
  });
});
