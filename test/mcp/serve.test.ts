// serveMCP: lagent actions as an MCP server, checked through the SDK's own client and through MCPToolkit.
import { request } from 'node:http';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ActionStatusCode, AsyncActionExecutor, asyncTool, tool } from 'lagent-ts';
import { type MCPServerHandle, MCPToolkit, serveMCP } from 'lagent-ts/mcp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { FROZEN_OPENAI_TOOLS } from '#src/schema/chat-message';
import { isRunning, markerEnv, waitFor } from '../helpers/processes';
import { FIXTURE, root } from './helpers';

const weather = tool({
  name: 'weather',
  description: 'The weather in a city',
  parameters: z.object({ city: z.string().describe('the city') }),
  run: ({ city }) => `Sunny in ${city}`,
});

const sleeper = asyncTool({
  name: 'sleeper',
  description: 'Waits until cancelled',
  parameters: z.object({}),
  run: (_args, { signal }) =>
    new Promise((resolve) => {
      signal?.addEventListener('abort', () => {
        cancelled += 1;
        resolve('cancelled');
      });
    }),
});
let cancelled = 0;

function fixtureParams() {
  return {
    command: process.execPath,
    args: ['--import', 'tsx', FIXTURE],
    env: markerEnv(),
    cwd: root,
    stderr: 'inherit' as const,
  };
}

describe('serveMCP over stdio, through the SDK client', () => {
  let client: Client;
  let transport: StdioClientTransport;
  beforeAll(async () => {
    transport = new StdioClientTransport(fixtureParams());
    client = new Client({ name: 'test', version: '1' });
    await client.connect(transport);
  });
  afterAll(async () => {
    const pid = transport?.pid;
    await client?.close();
    if (pid) await waitFor(() => !isRunning(pid));
  });

  it('lists every API as a tool with the JSON Schema of its zod parameters', async () => {
    expect(client.getServerVersion()?.name).toBe('lagent-fixture');
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name)).toEqual(['add', 'media__pixel', 'media__fail', 'add_tool']);
    const add = tools.find((t) => t.name === 'add');
    expect(add?.description).toBe('Add two integers');
    expect(add?.inputSchema).toMatchObject({
      type: 'object',
      properties: { a: { type: 'integer', description: 'first' }, b: { type: 'integer' } },
      required: ['a', 'b'],
    });
  });

  it('answers calls with the ActionReturn as content', async () => {
    expect(await client.callTool({ name: 'add', arguments: { a: 2, b: 3 } })).toEqual({
      content: [{ type: 'text', text: '5' }],
    });
    const pixel = await client.callTool({ name: 'media__pixel', arguments: {} });
    expect(pixel.content).toEqual([
      { type: 'text', text: 'a pixel:' },
      { type: 'image', mimeType: 'image/png', data: expect.stringMatching(/^iVBOR/) },
    ]);
  });

  it('answers bad arguments and failures as isError results with the text the model would see', async () => {
    const bad = await client.callTool({ name: 'add', arguments: { a: 'x', b: 1 } });
    expect(bad.isError).toBe(true);
    expect((bad.content as { text: string }[])[0]?.text).toContain('Invalid arguments for add');
    const failed = await client.callTool({ name: 'media__fail', arguments: { reason: 'test' } });
    expect(failed.isError).toBe(true);
    expect((failed.content as { text: string }[])[0]?.text).toContain('failed on purpose: test');
    await expect(client.callTool({ name: 'nope', arguments: {} })).rejects.toThrow(/Unknown tool: nope/);
  });
});

describe('MCPToolkit over stdio, against our own server', () => {
  it('follows the tool list when the server adds a tool at runtime', async () => {
    let changes = 0;
    const kit = await MCPToolkit.connect({
      ...fixtureParams(),
      name: 'lagent',
      onToolsChanged: () => {
        changes += 1;
      },
    });
    const pid = kit.pid!;
    try {
      const executor = new AsyncActionExecutor({ actions: [kit] });
      const offered = () => executor[FROZEN_OPENAI_TOOLS]('__').map((t) => t.function.name);
      expect(offered()).not.toContain('lagent__greet'); // the executor's cached list, as model clients read it
      expect(kit.apis.has('greet')).toBe(false);
      const failed = await kit.call({ reason: 'test' }, 'media__fail');
      expect(failed.state).toBe(ActionStatusCode.API_ERROR);
      expect(failed.errmsg).toContain('failed on purpose: test');
      expect((await kit.call({}, 'media__pixel')).result?.[1]?.content).toMatch(
        /^data:image\/png;base64,iVBOR/,
      );
      expect((await executor.forward('lagent.greet', { who: 'Ada' })).state).toBe(ActionStatusCode.API_ERROR);
      expect((await kit.call({ greeting: 'Hello' }, 'add_tool')).toText()).toBe('added greet');
      await waitFor(() => kit.apis.has('greet'));
      expect(changes).toBeGreaterThanOrEqual(1);
      expect(kit.toOpenAITools().map((t) => t.function.name)).toContain('lagent__greet');
      expect(kit.description.api_list?.map((api) => api.name)).toContain('greet');
      // The executor finds the new API by name, and offers it to the model without being told.
      expect((await executor.forward('lagent__greet', { who: 'Ada' })).toText()).toBe('Hello, Ada!');
      expect(offered()).toContain('lagent__greet');
    } finally {
      await kit.close();
    }
    await waitFor(() => !isRunning(pid));
  });
});

describe('serveMCP over Streamable HTTP', () => {
  let server: MCPServerHandle;
  beforeAll(async () => {
    server = await serveMCP({ actions: [weather, sleeper], transport: 'http', port: 0, name: 'lagent-http' });
  });
  afterAll(async () => {
    await server?.close();
  });

  it('binds 127.0.0.1 on a free port', () => {
    expect(server.port).toBeGreaterThan(0);
    expect(server.url).toBe(`http://127.0.0.1:${server.port}/mcp`);
  });

  it('serves the SDK client', async () => {
    const client = new Client({ name: 'test', version: '1' });
    await client.connect(new StreamableHTTPClientTransport(new URL(server.url!)));
    try {
      expect(client.getServerVersion()?.name).toBe('lagent-http');
      expect((await client.listTools()).tools.map((t) => t.name)).toEqual(['weather', 'sleeper']);
      expect(await client.callTool({ name: 'weather', arguments: { city: 'Paris' } })).toEqual({
        content: [{ type: 'text', text: 'Sunny in Paris' }],
      });
    } finally {
      await client.close();
    }
  });

  it('serves MCPToolkit, whose abort reaches the tool on the server', async () => {
    const kit = await MCPToolkit.connect({ url: server.url!, headers: { 'x-test': '1' } });
    try {
      expect(kit.name).toBe('lagent-http');
      expect(kit.pid).toBeNull();
      expect((await kit.call({ city: 'Oslo' }, 'weather')).toText()).toBe('Sunny in Oslo');
      expect((await kit.call({ town: 'Oslo' }, 'weather')).state).toBe(ActionStatusCode.ARGS_ERROR);
      const before = cancelled;
      const controller = new AbortController();
      const call = kit.call({}, 'sleeper', { signal: controller.signal });
      setTimeout(() => controller.abort(new Error('stop')), 100);
      await expect(call).rejects.toThrow('stop');
      await waitFor(() => cancelled === before + 1);
    } finally {
      await kit.close();
    }
  });

  it('tells connected clients when the tool list changes', async () => {
    const kit = await MCPToolkit.connect({ url: server.url!, name: 'remote' });
    try {
      await server.set(tool({ name: 'ping', parameters: z.object({}), run: () => 'pong' }));
      await waitFor(() => kit.apis.has('ping'));
      expect((await kit.call({}, 'ping')).toText()).toBe('pong');
      expect(await server.delete('ping')).toBe(true);
      await waitFor(() => !kit.apis.has('ping'));
    } finally {
      await kit.close();
    }
  });

  it('refuses requests addressed to a host other than loopback', async () => {
    const status = await new Promise<number>((resolve, reject) => {
      const req = request(
        {
          host: '127.0.0.1',
          port: server.port,
          path: '/mcp',
          method: 'POST',
          headers: { host: 'evil.example' },
        },
        (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        },
      );
      req.on('error', reject);
      req.end('{}');
    });
    expect(status).toBe(403);
  });

  it('close() frees the port', async () => {
    const other = await serveMCP({ actions: [weather], transport: 'http' });
    const kit = await MCPToolkit.connect({ url: other.url! });
    await other.close();
    await kit.close();
    await expect(fetch(other.url!, { method: 'POST' })).rejects.toThrow();
  });
});
