import {
  InterpreterParser,
  JSONParser,
  MixedToolParser,
  ParseError,
  PluginParser,
  ToolParser,
} from 'lagent-ts';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';

describe('parsers given something that is not text', () => {
  const parsers = [
    new ToolParser({ toolType: 'tool' }),
    new MixedToolParser({ parsers: [new PluginParser(), new InterpreterParser()] }),
    new JSONParser({ schema: z.object({ a: z.number() }) }),
  ];

  it('throw a ParseError naming what they got, even for values String() cannot convert', () => {
    const nullProto = Object.create(null);
    for (const parser of parsers) {
      for (const [value, kind] of [
        [nullProto, 'an object'],
        [42, 'a number'],
        [null, 'null'],
      ] as const) {
        let error: unknown;
        try {
          parser.parseResponse(value as never);
        } catch (thrown) {
          error = thrown;
        }
        expect(error).toBeInstanceOf(ParseError);
        expect((error as ParseError).message).toContain(`expects text, got ${kind}`);
      }
    }
  });

  it('JSONParser.formatResponse never throws on values JSON cannot write', () => {
    const parser = parsers[2] as JSONParser;
    const cyclic: Record<string, unknown> = { n: 1n };
    cyclic.self = cyclic;
    expect(parser.formatResponse(cyclic)).toBe('{\n  "n": 1,\n  "self": "[Circular]"\n}');
  });
});
