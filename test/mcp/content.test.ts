// How MCP results map to ActionReturns and back, and how a tool's JSON Schema is read.
import { ActionReturn, ActionStatusCode } from 'lagent-ts';
import { actionReturnResult, toolResultReturn } from 'lagent-ts/mcp';
import { beforeAll, describe, expect, it } from 'vitest';
import { checkArguments } from '#src/actions/arguments';
import { toolSchema } from '#src/mcp/json-schema';
import { loadRE2 } from '#src/mcp/patterns';

// re2js, an optional peer, is loaded with the MCP SDK; these tests use the parts directly.
beforeAll(() => loadRE2());

describe('MCP results as ActionReturns', () => {
  it('maps every kind of content block to an item', () => {
    const output = toolResultReturn(
      {
        content: [
          { type: 'text', text: 'hello' },
          { type: 'image', data: 'AAAA', mimeType: 'image/png' },
          { type: 'audio', data: 'BBBB', mimeType: 'audio/wav' },
          { type: 'resource', resource: { uri: 'demo://a', text: 'resource text' } },
          { type: 'resource', resource: { uri: 'demo://b', blob: 'CCCC', mimeType: 'application/gzip' } },
          { type: 'resource_link', uri: 'file:///tmp/x.txt', name: 'x' },
        ],
      },
      { q: 1 },
      'kit',
    );
    expect(output.state).toBe(ActionStatusCode.SUCCESS);
    expect(output.result).toEqual([
      { type: 'text', content: 'hello' },
      { type: 'image', content: 'data:image/png;base64,AAAA' },
      { type: 'audio', content: 'data:audio/wav;base64,BBBB' },
      { type: 'text', content: 'resource text' },
      { type: 'file', content: 'data:application/gzip;base64,CCCC' },
      { type: 'resource', content: 'file:///tmp/x.txt' },
    ]);
  });

  it('uses structured content when there is no content, and isError as an API_ERROR', () => {
    const structured = toolResultReturn({ content: [], structuredContent: { temperature: 21 } }, {}, 'kit');
    expect(structured.toText()).toBe('{"temperature":21}');
    const failed = toolResultReturn(
      { content: [{ type: 'text', text: 'city not found' }], isError: true },
      {},
      'kit',
    );
    expect(failed.state).toBe(ActionStatusCode.API_ERROR);
    expect(failed.errmsg).toBe('city not found');
  });

  it('maps ActionReturns to results for MCP clients', () => {
    const ok = new ActionReturn({
      result: [
        { type: 'text', content: 'a' },
        { type: 'image', content: 'data:image/png;base64,AAAA' },
        { type: 'image', content: 'https://example.com/a.png' },
      ],
    });
    expect(actionReturnResult(ok)).toEqual({
      content: [
        { type: 'text', text: 'a' },
        { type: 'image', data: 'AAAA', mimeType: 'image/png' },
        { type: 'text', text: '[image](https://example.com/a.png)' },
      ],
    });
    const bad = new ActionReturn({ errmsg: 'no such city', state: ActionStatusCode.API_ERROR });
    expect(actionReturnResult(bad)).toEqual({
      content: [{ type: 'text', text: 'no such city' }],
      isError: true,
    });
  });
});

describe('a tool JSON Schema', () => {
  it('is described for Lagent and checked with zod', () => {
    const { schema, info } = toolSchema('search', 'Search', {
      $schema: 'http://json-schema.org/draft-07/schema#',
      type: 'object',
      properties: {
        query: { type: 'string', description: 'what to look for' },
        limit: { type: 'integer', minimum: 1 },
        mode: { enum: ['fast', 'deep'] },
      },
      required: ['query'],
      additionalProperties: false,
    });
    expect(info.jsonSchema.$schema).toBeUndefined();
    expect(info.signature).toBe('query: string, limit?: integer, mode?: "fast" | "deep"');
    expect(info.description.parameters).toEqual([
      { name: 'query', type: 'STRING', description: 'what to look for' },
      { name: 'limit', type: 'NUMBER', description: '' },
      { name: 'mode', type: 'STRING', description: '' },
    ]);
    const rules = { schema, signature: info.signature };
    expect(checkArguments(rules, { query: 'x', limit: 2 }, 'kit.search').ok).toBe(true);
    const zero = checkArguments(rules, { query: 'x', limit: 0 }, 'kit.search');
    expect(zero.ok === false && zero.errmsg).toContain('"limit"');
    const extra = checkArguments(rules, { query: 'x', colour: 'red' }, 'kit.search');
    expect(extra.ok).toBe(false);
    const mode = checkArguments(rules, { query: 'x', mode: 'slow' }, 'kit.search');
    expect(mode.ok).toBe(false);
  });

  it('checks a schema that is not a plain object through a refinement', () => {
    const { schema } = toolSchema('either', '', {
      type: 'object',
      anyOf: [
        { type: 'object', properties: { a: { type: 'string' } }, required: ['a'] },
        { type: 'object', properties: { b: { type: 'string' } }, required: ['b'] },
      ],
    });
    expect(schema.safeParse({ a: 'x' }).success).toBe(true);
    expect(schema.safeParse({ c: 'x' }).success).toBe(false);
  });
});
