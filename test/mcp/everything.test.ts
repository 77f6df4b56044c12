// MCPToolkit against a real third-party server: @modelcontextprotocol/server-everything over stdio.

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { ActionStatusCode, AsyncActionExecutor } from 'lagent-ts';
import { MCPConnectionError, MCPToolkit } from 'lagent-ts/mcp';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { isRunning, markerEnv, processesMentioning, waitFor } from '../helpers/processes';
import { EVERYTHING } from './helpers';

function everything(options: { timeoutMs?: number; env?: Record<string, string> } = {}): Promise<MCPToolkit> {
  return MCPToolkit.connect({
    command: process.execPath,
    args: [EVERYTHING, 'stdio'],
    env: { ...markerEnv(), ...(options.env ?? {}) },
    stderr: 'ignore',
    name: 'everything',
    ...(options.timeoutMs !== undefined ? { timeoutMs: options.timeoutMs } : {}),
  });
}

describe('MCPToolkit over stdio (server-everything)', () => {
  let kit: MCPToolkit;
  beforeAll(async () => {
    process.env.LAGENT_MCP_TEST_SECRET = 'do-not-leak';
    kit = await everything({ env: { MCP_PASSED: 'yes' } });
  });
  afterAll(async () => {
    delete process.env.LAGENT_MCP_TEST_SECRET;
    await kit?.close();
  });

  it('is a toolkit whose APIs are the server tools, described for Lagent and OpenAI', () => {
    expect(kit.name).toBe('everything');
    expect(kit.isToolkit).toBe(true);
    expect(kit.serverInfo.name).toBe('mcp-servers/everything');
    expect([...kit.apis.keys()]).toEqual(expect.arrayContaining(['get-sum', 'echo', 'get-tiny-image']));
    const sum = kit.description.api_list?.find((api) => api.name === 'get-sum');
    expect(sum).toMatchObject({
      description: 'Returns the sum of two numbers',
      parameters: [
        { name: 'a', type: 'FLOAT', description: 'First number' },
        { name: 'b', type: 'FLOAT', description: 'Second number' },
      ],
      required: ['a', 'b'],
    });
    const tool = kit.toOpenAITools().find((t) => t.function.name === 'everything__get-sum');
    expect(tool?.function.parameters).toMatchObject({
      type: 'object',
      properties: { a: { type: 'number' }, b: { type: 'number' } },
      required: ['a', 'b'],
    });
  });

  it('calls get-sum and echo, with results as text items', async () => {
    const sum = await kit.call({ a: 2, b: 40 }, 'get-sum');
    expect(sum.state).toBe(ActionStatusCode.SUCCESS);
    expect(sum.result).toEqual([{ type: 'text', content: 'The sum of 2 and 40 is 42.' }]);
    expect(sum.args).toEqual({ a: 2, b: 40 });
    expect(sum.type).toBe('everything');
    // A JSON string, as a text-protocol model writes it, works too.
    expect((await kit.call('{"message": "hello"}', 'echo')).toText()).toBe('Echo: hello');
  });

  it('maps get-tiny-image to text and image items (the image as a data: URL)', async () => {
    const image = await kit.call({}, 'get-tiny-image');
    expect(image.state).toBe(ActionStatusCode.SUCCESS);
    const types = image.result?.map((item) => item.type);
    expect(types).toContain('image');
    expect(types).toContain('text');
    const png = image.result?.find((item) => item.type === 'image');
    expect(png?.content).toMatch(/^data:image\/png;base64,[A-Za-z0-9+/]+=*$/);
    expect(Buffer.from(png!.content.split(',')[1]!, 'base64').subarray(1, 4).toString()).toBe('PNG');
  });

  it('maps an embedded resource to its text', async () => {
    const reference = await kit.call({ resourceType: 'Text', resourceId: 1 }, 'get-resource-reference');
    expect(reference.state).toBe(ActionStatusCode.SUCCESS);
    expect(
      reference.result?.some((item) => item.type === 'text' && item.content.includes('Resource 1')),
    ).toBe(true);
  });

  it('answers bad arguments with an ARGS_ERROR the model can read, without calling the server', async () => {
    const bad = await kit.call({ a: 'one' }, 'get-sum');
    expect(bad.state).toBe(ActionStatusCode.ARGS_ERROR);
    expect(bad.errmsg).toContain('everything.get-sum');
    expect(bad.errmsg).toContain('"a"');
    expect(bad.errmsg).toContain('It takes a: number, b: number');
    const notJSON = await kit.call('a=1, b=2', 'get-sum');
    expect(notJSON.state).toBe(ActionStatusCode.ARGS_ERROR);
    const unknown = await kit.call({}, 'no-such-tool');
    expect(unknown.state).toBe(ActionStatusCode.API_ERROR);
    expect(unknown.errmsg).toContain('invalid API');
  });

  it('gives the server only the safe default environment plus what was passed', async () => {
    const env = JSON.parse((await kit.call({}, 'get-env')).toText()) as Record<string, string>;
    expect(env.MCP_PASSED).toBe('yes');
    expect(env.LAGENT_TEST_RUN).toBe(process.env.LAGENT_TEST_RUN);
    expect(env.PATH).toBe(process.env.PATH);
    expect(env.LAGENT_MCP_TEST_SECRET).toBeUndefined();
  });

  it('stops waiting when the caller aborts, and the server goes on serving', async () => {
    const controller = new AbortController();
    // A ten-minute operation: only the abort ends the wait. Abort once the request is out.
    const sent = vi.spyOn(Client.prototype, 'callTool');
    try {
      const call = kit.call({ duration: 600, steps: 10 }, 'trigger-long-running-operation', {
        signal: controller.signal,
      });
      await expect.poll(() => sent.mock.calls.length).toBe(1);
      controller.abort(new Error('user stop'));
      await expect(call).rejects.toThrow('user stop');
    } finally {
      sent.mockRestore();
    }
    expect((await kit.call({ a: 1, b: 1 }, 'get-sum')).toText()).toBe('The sum of 1 and 1 is 2.');
  });

  it('turns a per-call timeout into an API_ERROR', async () => {
    // A ten-minute operation: only the timeout ends the call.
    const slow = await kit.call({ duration: 600, steps: 10 }, 'trigger-long-running-operation', {
      timeoutMs: 300,
    });
    expect(slow.state).toBe(ActionStatusCode.API_ERROR);
    expect(slow.errmsg).toContain('timed out after 300 ms');
  });

  it('runs in an AsyncActionExecutor, by Name.api and Name__api', async () => {
    const executor = new AsyncActionExecutor({ actions: [kit] });
    expect((await executor.forward('everything.get-sum', { a: 1, b: 2 })).toText()).toBe(
      'The sum of 1 and 2 is 3.',
    );
    expect((await executor.forward('everything__echo', { message: 'x' })).toText()).toBe('Echo: x');
    expect(executor.description().map((api) => api.name)).toContain('everything.get-sum');
  });
});

describe('MCPToolkit lifecycle (server-everything)', () => {
  it('applies the toolkit timeout to the request itself', async () => {
    const kit = await everything({ timeoutMs: 300 });
    try {
      const slow = await kit.call({ duration: 10, steps: 10 }, 'trigger-long-running-operation');
      expect(slow.state).toBe(ActionStatusCode.API_ERROR);
      expect(slow.errmsg).toMatch(/timed out/i);
    } finally {
      await kit.close();
    }
  });

  it('close() ends the server process', async () => {
    const kit = await everything();
    const pid = kit.pid;
    expect(pid).toEqual(expect.any(Number));
    expect(isRunning(pid!)).toBe(true);
    await kit.close();
    await kit.close(); // twice is fine
    expect(kit.isClosed).toBe(true);
    await waitFor(() => !isRunning(pid!));
    expect(kit.pid).toBeNull();
    const after = await kit.call({ a: 1, b: 2 }, 'get-sum');
    expect(after.state).toBe(ActionStatusCode.API_ERROR);
  });

  it('stops a server that does not answer the handshake in time, or when connecting is aborted', async () => {
    const silent = (token: string) => ['-e', `setInterval(() => {}, 1000); // ${token}`];
    const token = `silent-${process.pid}-${Date.now()}`;
    const timedOut = MCPToolkit.connect({
      command: process.execPath,
      args: silent(`${token}-a`),
      env: markerEnv(),
      connectTimeoutMs: 300,
    });
    await expect(timedOut).rejects.toThrow(/could not connect to the MCP server.*timed out/i);
    const controller = new AbortController();
    const aborted = MCPToolkit.connect({
      command: process.execPath,
      args: silent(`${token}-b`),
      env: markerEnv(),
      signal: controller.signal,
    });
    setTimeout(() => controller.abort(new Error('gave up')), 200);
    await expect(aborted).rejects.toThrow('gave up');
    await waitFor(() => processesMentioning(token).length === 0);
  });

  it('rejects with an MCPConnectionError when the server cannot start', async () => {
    await expect(
      MCPToolkit.connect({ command: '/nonexistent/mcp-server', env: markerEnv(), stderr: 'ignore' }),
    ).rejects.toBeInstanceOf(MCPConnectionError);
    await expect(
      MCPToolkit.connect({ command: process.execPath, args: ['-e', 'process.exit(3)'], env: markerEnv() }),
    ).rejects.toThrow(/could not connect to the MCP server/);
  });
});
