import fc from 'fast-check';
import {
  AgentMessage,
  DefaultAggregator,
  InternLMToolAggregator,
  InterpreterParser,
  JSONParser,
  Memory,
  MixedToolParser,
  ParseError,
  PluginParser,
  StrParser,
  ToolParser,
} from 'lagent-ts';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { pythonJSON } from '#src/utils/text';
import { propertyRuns } from '../helpers/property-runs';

const parsers = () => [
  new StrParser(),
  new ToolParser({ toolType: 'code', begin: '```python\n', end: '\n```\n' }),
  new ToolParser({ toolType: 'json', begin: '```json\n', end: '\n```\n', validate: JSON.parse }),
  new InterpreterParser(),
  new PluginParser(),
  new MixedToolParser({ parsers: [new PluginParser(), new InterpreterParser()] }),
  new JSONParser({ schema: z.object({ a: z.number() }) }),
];

/** Arbitrary text, often containing the markers the parsers look for. */
const text = fc
  .array(
    fc.oneof(
      fc.string({ unit: 'grapheme' }),
      fc.constantFrom(
        '```python\n',
        '\n```\n',
        '```json\n',
        '<|action_start|><|plugin|>\n',
        '<|action_end|>\n',
        '{',
        '}',
        '"',
        '//',
        ',',
      ),
    ),
    { maxLength: 8 },
  )
  .map((parts) => parts.join(''));

function onlyParseErrors(run: () => unknown): void {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(ParseError);
  }
}

describe('parser and aggregator properties', () => {
  it('no parser throws anything but ParseError on arbitrary strings', () => {
    const all = parsers();
    fc.assert(
      fc.property(text, (input) => {
        for (const parser of all) {
          onlyParseErrors(() => parser.parseResponse(input));
          onlyParseErrors(() => {
            const parsed = parser.parseResponse(input);
            (parser.formatResponse as (value: unknown) => string)(parsed);
          });
        }
      }),
      { numRuns: propertyRuns(300) },
    );
  });

  it('formatResponse(parseResponse(x)) === x for valid tool text', () => {
    const begin = '```python\n';
    const end = '\n```\n';
    const parser = new ToolParser({ toolType: 'code', begin, end });
    const free = fc.string({ unit: 'grapheme' }).filter((s) => !s.includes('`'));
    fc.assert(
      fc.property(free, free, (thought, action) => {
        const valid = thought + begin + action + end;
        fc.pre(!valid.slice(0, -end.length).includes(end, thought.length + begin.length));
        expect(parser.formatResponse(parser.parseResponse(valid))).toBe(valid);
      }),
      { numRuns: propertyRuns(300) },
    );
  });

  it('round-trips plugin calls with JSON actions in Python json.dumps form', () => {
    const parser = new PluginParser();
    const action = fc.record({
      name: fc.string({ unit: 'grapheme' }),
      parameters: fc.dictionary(fc.string(), fc.string()),
    });
    fc.assert(
      fc.property(
        fc.string({ unit: 'grapheme' }).filter((s) => !s.includes('<|')),
        action,
        (thought, call) => {
          const valid = `${thought}<|action_start|><|plugin|>\n${pythonJSON(call)}<|action_end|>\n`;
          expect(parser.formatResponse(parser.parseResponse(valid))).toBe(valid);
        },
      ),
      { numRuns: propertyRuns(200) },
    );
  });

  it('aggregators never throw on arbitrary memory text', () => {
    const parser = new MixedToolParser({ parsers: [new PluginParser(), new InterpreterParser()] });
    const tool = new InternLMToolAggregator();
    const plain = new DefaultAggregator();
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.constantFrom('user', 'Agent', 'ActionExecutor'), text), { maxLength: 6 }),
        (turns) => {
          const memory = new Memory();
          for (const [sender, content] of turns) {
            let formatted: unknown = null;
            if (sender === 'Agent') {
              try {
                formatted = parser.parseResponse(content);
              } catch {
                formatted = null;
              }
            }
            memory.add(new AgentMessage({ sender, content, formatted }));
          }
          onlyParseErrors(() => tool.aggregate(memory, 'Agent', parser, 'system'));
          onlyParseErrors(() => plain.aggregate(memory, 'Agent', parser, 'system'));
        },
      ),
      { numRuns: propertyRuns(200) },
    );
  });
});
