// MCPToolkit against a hostile MCP server: patterns built to backtrack, tools that are not tools, names past
// OpenAI's limit, and storms of tools/list_changed notifications.
import { randomUUID } from 'node:crypto';
import { createServer, type Server as HTTPServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { ActionStatusCode } from 'lagent-ts';
import { MCPToolkit } from 'lagent-ts/mcp';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../helpers/processes';

/** A stateful SDK server whose tool list the test sets, counting listings and calls. */
interface Hostile {
  url: string;
  tools: unknown[];
  lists: number;
  calls: string[];
  servers: Server[];
  close(): Promise<void>;
}

async function startHostile(tools: unknown[]): Promise<Hostile> {
  const state: Hostile = {
    url: '',
    tools,
    lists: 0,
    calls: [],
    servers: [],
    close: async () => undefined,
  };
  const sessions = new Map<string, StreamableHTTPServerTransport>();
  const http: HTTPServer = createServer(async (request, response) => {
    const id = request.headers['mcp-session-id'];
    if (typeof id === 'string') {
      const session = sessions.get(id);
      if (!session) {
        response.writeHead(404).end();
        return;
      }
      await session.handleRequest(request, response);
      return;
    }
    const server = new Server(
      { name: 'hostile', version: '1' },
      { capabilities: { tools: { listChanged: true } } },
    );
    // The SDK's own handler would check the tools it sends; a hostile server sends whatever it likes.
    server.setRequestHandler(ListToolsRequestSchema, () => {
      state.lists += 1;
      return { tools: state.tools } as never;
    });
    server.setRequestHandler(CallToolRequestSchema, (call) => {
      state.calls.push(call.params.name);
      return { content: [{ type: 'text', text: `called ${call.params.name}` }] };
    });
    const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (sessionId) => {
        sessions.set(sessionId, transport);
      },
    });
    state.servers.push(server);
    await server.connect(transport);
    await transport.handleRequest(request, response);
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', () => resolve()));
  state.url = `http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp`;
  state.close = async () => {
    await Promise.all(state.servers.map((server) => server.close().catch(() => undefined)));
    await new Promise<void>((resolve) => {
      http.close(() => resolve());
      http.closeAllConnections();
    });
  };
  return state;
}

/** Warnings emitted while `run` runs, by code. */
async function warningsDuring(
  run: () => Promise<void>,
): Promise<{ code: string | undefined; message: string }[]> {
  const seen: { code: string | undefined; message: string }[] = [];
  const listener = (warning: Error & { code?: string }) =>
    seen.push({ code: warning.code, message: warning.message });
  process.on('warning', listener);
  try {
    await run();
    // Warnings are emitted on the next tick.
    await new Promise((resolve) => setImmediate(resolve));
  } finally {
    process.off('warning', listener);
  }
  return seen;
}

/**
 * Runs `work` and records the source of every RegExp executed on this thread meanwhile (`test`, `match`,
 * `replace` and the rest all go through `exec`): a pattern run by the backtracking engine shows up here.
 */
async function regExpsRun<T>(work: () => Promise<T>): Promise<{ value: T; patterns: string[] }> {
  const exec = RegExp.prototype.exec;
  const patterns: string[] = [];
  RegExp.prototype.exec = function recorded(this: RegExp, text: string) {
    patterns.push(this.source);
    return exec.call(this, text);
  };
  try {
    return { value: await work(), patterns };
  } finally {
    RegExp.prototype.exec = exec;
  }
}

const stringArg = (pattern: string) => ({
  type: 'object',
  properties: { text: { type: 'string', pattern } },
  required: ['text'],
});

describe('MCPToolkit against a hostile server', () => {
  let hostile: Hostile;
  let kit: MCPToolkit | undefined;
  beforeAll(async () => {
    hostile = await startHostile([]);
  });
  afterEach(async () => {
    await kit?.close();
    kit = undefined;
  });
  afterAll(async () => {
    await hostile?.close();
  });

  it('checks a catastrophic-backtracking pattern in linear time, and still checks it', async () => {
    hostile.tools = [
      { name: 'redos', inputSchema: stringArg('^(a+)+$') },
      {
        name: 'nested',
        inputSchema: {
          type: 'object',
          properties: { list: { type: 'array', items: { $ref: '#/$defs/word' } } },
          patternProperties: { '^x_': { type: 'string', pattern: '^[0-9]+$' } },
          additionalProperties: false,
          $defs: { word: { type: 'string', pattern: '^\\u0061+$' } },
        },
      },
    ];
    kit = await MCPToolkit.connect({ url: hostile.url });
    // The backtracking engine (RegExp) would take seconds here, doubling with each further `a`: the pattern
    // must be checked without it.
    const { value: refused, patterns } = await regExpsRun(() =>
      kit!.call({ text: `${'a'.repeat(27)}!` }, 'redos'),
    );
    expect(patterns).not.toContain('^(a+)+$');
    expect(refused.state).toBe(ActionStatusCode.ARGS_ERROR);
    expect(refused.errmsg).toContain('argument "text": must match the pattern /^(a+)+$/');
    expect((await kit.call({ text: 'a'.repeat(100_000) }, 'redos')).toText()).toBe('called redos');

    const nested = await kit.call({ list: ['aa', 'ab'], x_1: '12' }, 'nested');
    expect(nested.state).toBe(ActionStatusCode.ARGS_ERROR);
    expect(nested.errmsg).toContain('argument "list.1": must match the pattern');
    expect((await kit.call({ list: ['a'], x_1: 'z' }, 'nested')).errmsg).toContain('argument "x_1"');
    expect((await kit.call({ list: ['a'], y: '1' }, 'nested')).errmsg).toContain('unknown property "y"');
    expect((await kit.call({ list: ['aa'], x_1: '12' }, 'nested')).toText()).toBe('called nested');
  });

  it('leaves a pattern RE2 cannot run to the server, with one warning', async () => {
    hostile.tools = [
      { name: 'lookahead', inputSchema: stringArg('^(?=(a+)+$)b') },
      { name: 'lookahead_too', inputSchema: stringArg('^(?=(a+)+$)b') },
    ];
    const warnings = await warningsDuring(async () => {
      kit = await MCPToolkit.connect({ url: hostile.url });
      await kit.refresh();
    });
    const unchecked = warnings.filter((warning) => warning.code === 'LAGENT_MCP_PATTERN_UNCHECKED');
    expect(unchecked).toHaveLength(2);
    expect(unchecked[0]?.message).toContain('/^(?=(a+)+$)b/');
    // Left to the server: no backtracking RegExp runs it here.
    const { value: answer, patterns } = await regExpsRun(() =>
      kit!.call({ text: `${'a'.repeat(30)}!` }, 'lookahead'),
    );
    expect(answer.toText()).toBe('called lookahead');
    expect(patterns).not.toContain('^(?=(a+)+$)b');
  });

  it('skips tools that are not valid MCP tools, with a warning, and serves the rest', async () => {
    let deep: Record<string, unknown> = { type: 'string' };
    for (let i = 0; i < 1000; i++) deep = { type: 'object', properties: { a: deep } };
    hostile.tools = [
      { name: 'good', inputSchema: { type: 'object', properties: {} } },
      { name: 'not-an-object', inputSchema: { type: 'string' } },
      { inputSchema: { type: 'object' } },
      'not even an object',
      { name: 'too-deep', inputSchema: deep },
      { name: 'bad-enum', inputSchema: { type: 'object', properties: { a: { enum: 5 } } } },
      { name: 'good2', inputSchema: { type: 'object' } },
    ];
    const warnings = await warningsDuring(async () => {
      kit = await MCPToolkit.connect({ url: hostile.url });
    });
    expect([...kit!.apis.keys()]).toEqual(['good', 'good2']);
    const skipped = warnings.filter((warning) => warning.code === 'LAGENT_MCP_TOOL_SKIPPED');
    expect(skipped.map((warning) => warning.message).join('\n')).toMatch(
      /"not-an-object"[^\n]*\n[^\n]*\(no name\)/,
    );
    for (const name of ['"too-deep"', '"bad-enum"']) {
      expect(skipped.some((warning) => warning.message.includes(name))).toBe(true);
    }
    expect((await kit!.call({}, 'good2')).toText()).toBe('called good2');
  });

  it('cuts API names so that Name__api fits 64 characters, keeping them unique', async () => {
    const long = `t${'x'.repeat(99)}`;
    hostile.tools = [
      { name: long, inputSchema: { type: 'object' } },
      { name: `${long}y`, inputSchema: { type: 'object' } },
      { name: `${long}z`, inputSchema: { type: 'object' } },
    ];
    kit = await MCPToolkit.connect({ url: hostile.url, name: 'kit' });
    const names = kit.toOpenAITools().map((tool) => tool.function.name);
    expect(new Set(names).size).toBe(3);
    for (const name of names) {
      expect(name.length).toBeLessThanOrEqual(64);
      expect(name).toMatch(/^kit__tx+(_\d)?$/);
    }
    const apis = [...kit.apis.keys()];
    expect((await kit.call({}, apis[2]!)).toText()).toBe(`called ${long}z`);
    await expect(MCPToolkit.connect({ url: hostile.url, name: 'n'.repeat(60) })).rejects.toThrow(
      /name must be at most 54 characters/,
    );
  });

  it('lists the tools a bounded number of times in a storm of list_changed notifications', async () => {
    hostile.tools = [{ name: 'first', inputSchema: { type: 'object' } }];
    let changes = 0;
    kit = await MCPToolkit.connect({
      url: hostile.url,
      listChangedDebounceMs: 50,
      onToolsChanged: () => {
        changes += 1;
      },
    });
    const server = hostile.servers.at(-1)!;
    // The client's notification stream is open once a notification reaches it.
    hostile.tools = [{ name: 'second', inputSchema: { type: 'object' } }];
    await server.sendToolListChanged();
    await waitFor(() => kit!.apis.has('second'));
    const before = hostile.lists;
    hostile.tools = [{ name: 'third', inputSchema: { type: 'object' } }];
    for (let i = 0; i < 500; i++) await server.sendToolListChanged();
    await waitFor(() => kit!.apis.has('third'));
    await new Promise((resolve) => setTimeout(resolve, 300));
    // One listing per 50 ms period at most; without coalescing it is one per notification (500).
    expect(hostile.lists - before).toBeLessThanOrEqual(10);
    expect(changes).toBeLessThanOrEqual(11);
    expect([...kit.apis.keys()]).toEqual(['third']);
  });
});
