// MCPToolkit in native function calling: the model sees the server's tools as OpenAI functions (Name__api).

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { AsyncFunctionCallingAgent } from 'lagent-ts';
import { MCPToolkit } from 'lagent-ts/mcp';
import { AsyncMockLLM } from 'lagent-ts/testing';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { markerEnv } from '../helpers/processes';
import { EVERYTHING } from './helpers';

describe('MCPToolkit in AsyncFunctionCallingAgent', () => {
  let kit: MCPToolkit;
  beforeAll(async () => {
    kit = await MCPToolkit.connect({
      command: process.execPath,
      args: [EVERYTHING, 'stdio'],
      env: markerEnv(),
      stderr: 'ignore',
      name: 'everything',
    });
  });
  afterAll(async () => {
    await kit?.close();
  });

  it('offers the tools, runs the call on the server and hands the result back to the model', async () => {
    const llm = new AsyncMockLLM({
      responses: (messages, _params, index) => {
        if (index === 0) {
          return {
            toolCalls: [
              { name: 'everything__get-sum', arguments: { a: 19, b: 23 } },
              { name: 'everything__get-sum', arguments: '{"a": "nineteen"}' },
            ],
          };
        }
        const results = messages
          .filter((message) => message.role === 'tool')
          .map((message) => message.content);
        return `The tools said: ${results.join(' | ')}`;
      },
    });
    const agent = new AsyncFunctionCallingAgent({ llm, actions: [kit], timeoutMs: 10_000 });
    const reply = await agent.call('What is 19 + 23?');
    const offered = llm.calls[0]!.tools!.map((tool) => tool.function.name);
    expect(offered).toEqual(expect.arrayContaining(['everything__get-sum', 'everything__echo']));
    expect(offered.every((name) => /^[A-Za-z0-9_-]+$/.test(name))).toBe(true);
    expect(reply.content).toContain('The sum of 19 and 23 is 42.');
    // The bad call reached the model as an error it can read, not as an exception.
    expect(reply.content).toMatch(/Invalid arguments for everything(\.|__)get-sum: argument "a"/);
  });

  it('stops the tool call when the agent call is aborted', async () => {
    const llm = new AsyncMockLLM({
      responses: [
        {
          toolCalls: [
            { name: 'everything__trigger-long-running-operation', arguments: { duration: 600, steps: 10 } },
          ],
        },
        'done',
      ],
    });
    const agent = new AsyncFunctionCallingAgent({ llm, actions: [kit] });
    // A ten-minute operation: only the abort ends the call. Abort once the tool's request is out.
    const controller = new AbortController();
    const sent = vi.spyOn(Client.prototype, 'callTool');
    try {
      const call = agent.call('run it', { signal: controller.signal });
      await expect.poll(() => sent.mock.calls.length).toBe(1);
      controller.abort(new Error('cancelled by user'));
      await expect(call).rejects.toThrow('cancelled by user');
    } finally {
      sent.mockRestore();
    }
  });
});
