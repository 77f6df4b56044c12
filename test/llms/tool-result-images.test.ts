import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  ActionReturn,
  ActionStatusCode,
  AsyncClaudeAPI,
  AsyncFunctionCallingAgent,
  AsyncGPTAPI,
  asyncTool,
} from 'lagent-ts';
import { startFakeAnthropic, startFakeOpenAI } from 'lagent-ts/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { loadImage, MAX_IMAGE_BYTES } from '#src/llms/image-inputs';

/** Images of tool results (an interpreter's figures: `image` items with a host path) on the wire. */

/** The smallest valid PNG: 1x1, one transparent pixel. */
const PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=',
  'base64',
);

let dir: string;
let figure: string;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'lagent-images-'));
  figure = join(dir, 'figure-1.png');
  writeFileSync(figure, PNG);
});

afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

/** A tool that answers like the interpreter: its output as text, then each figure as an `image` item. */
function plotTool(paths: () => string[]) {
  return asyncTool({
    name: 'Plot',
    description: 'draws a figure',
    parameters: z.object({ title: z.string() }),
    run: async ({ title }) =>
      new ActionReturn({
        result: [
          { type: 'text', content: `plotted ${title}` },
          ...paths().map((path) => ({ type: 'image', content: path })),
        ],
      }),
  });
}

const failing = asyncTool({
  name: 'Fail',
  description: 'always fails',
  parameters: z.object({}),
  run: async () => new ActionReturn({ errmsg: 'the disk is full', state: ActionStatusCode.API_ERROR }),
});

describe('tool-result images to OpenAI-compatible servers', () => {
  it('follow the tool messages as a user message of image_url data: URLs; the path stays in the tool text and the ActionReturn', async () => {
    const server = await startFakeOpenAI({
      script: [
        { toolCalls: [{ id: 'call_p', name: 'Plot', arguments: { title: 'sales' } }] },
        'A rising line.',
      ],
    });
    try {
      const llm = new AsyncGPTAPI({ model: 'm', baseURL: server.baseURL, apiKey: 'k' });
      const agent = new AsyncFunctionCallingAgent({ llm, actions: [plotTool(() => [figure])] });
      const reply = await agent.call('Plot sales');
      expect(reply.content).toBe('A rising line.');
      const messages = server.requests[1]!.body.messages;
      const at = messages.findIndex((message: { role: string }) => message.role === 'tool');
      expect(messages[at]).toEqual({
        role: 'tool',
        tool_call_id: 'call_p',
        content: `plotted sales\n[image](${figure})`,
      });
      expect(messages[at + 1]).toEqual({
        role: 'user',
        content: [
          { type: 'text', text: 'Images returned by the tool calls above:' },
          { type: 'image_url', image_url: { url: `data:image/png;base64,${PNG.toString('base64')}` } },
        ],
      });
      // The user keeps the host path: the executor's reply in memory holds the ActionReturn as the tool gave it.
      const results = agent.agent.memory!.get(0)!.getMemory()[2]!.content as ActionReturn[];
      expect(results[0]!.result).toContainEqual({ type: 'image', content: figure });
    } finally {
      await server.close();
    }
  });

  it('names an image it does not send (too large, not an image, a symbolic link, a directory, relative) and sends none with sendImages: false', async () => {
    const big = join(dir, 'big.png');
    writeFileSync(big, Buffer.concat([PNG, Buffer.alloc(MAX_IMAGE_BYTES)]));
    const secret = join(dir, 'secret.png');
    writeFileSync(secret, 'not an image: a secret\n');
    const link = join(dir, 'link.png');
    symlinkSync(figure, link);
    const folder = join(dir, 'folder.png');
    mkdirSync(folder);
    const server = await startFakeOpenAI({
      script: [{ toolCalls: [{ id: 'call_p', name: 'Plot', arguments: { title: 't' } }] }, 'ok'],
    });
    try {
      const tool = plotTool(() => [big, secret, link, folder, 'figure-1.png']);
      const llm = new AsyncGPTAPI({ model: 'm', baseURL: server.baseURL, apiKey: 'k' });
      await new AsyncFunctionCallingAgent({ llm, actions: [tool] }).call('plot');
      const messages = server.requests[1]!.body.messages;
      const parts = messages.at(-1).content as { type: string; text?: string }[];
      expect(parts.map((part) => part.type)).toEqual(['text', 'text', 'text', 'text', 'text', 'text']);
      expect(parts.slice(1).map((part) => part.text)).toEqual([
        `(the image ${big} was not sent: it is larger than 3.75 MB)`,
        `(the image ${secret} was not sent: it is not a PNG, JPEG, GIF or WebP image)`,
        `(the image ${link} was not sent: it is a symbolic link)`,
        `(the image ${folder} was not sent: it is not a regular file)`,
        '(the image figure-1.png was not sent: it is neither an absolute file path nor a data: URL)',
      ]);
      expect(JSON.stringify(messages)).not.toContain('a secret');

      server.setScript([{ toolCalls: [{ id: 'call_q', name: 'Plot', arguments: { title: 't' } }] }, 'ok']);
      const textOnly = new AsyncGPTAPI({
        model: 'm',
        baseURL: server.baseURL,
        apiKey: 'k',
        sendImages: false,
      });
      await new AsyncFunctionCallingAgent({ llm: textOnly, actions: [plotTool(() => [figure])] }).call(
        'plot',
      );
      const last = server.requests.at(-1)!.body.messages;
      expect(last.at(-1)).toMatchObject({ role: 'tool', content: `plotted t\n[image](${figure})` });
      expect(JSON.stringify(last)).not.toContain('image_url');
    } finally {
      await server.close();
    }
  });

  it('reads data: URLs (MCP images) without touching the disk, within the size cap', async () => {
    const url = `data:image/png;base64,${PNG.toString('base64')}`;
    expect(await loadImage(url)).toEqual({ mediaType: 'image/png', data: PNG.toString('base64') });
    expect(await loadImage(url, 10)).toEqual({ skipped: 'it is larger than 0.00 MB' });
    expect(await loadImage('data:text/plain;base64,aGk=')).toHaveProperty('skipped');
  });
});

describe('tool results to Claude', () => {
  it('carry image blocks inside tool_result, and is_error when the call failed', async () => {
    const server = await startFakeAnthropic({
      script: [
        {
          toolCalls: [
            { id: 'toolu_p', name: 'Plot', arguments: { title: 'sales' } },
            { id: 'toolu_f', name: 'Fail', arguments: {} },
          ],
        },
        'Done.',
      ],
    });
    try {
      const llm = new AsyncClaudeAPI({
        model: 'claude-test',
        apiKey: 'k',
        baseURL: server.baseURL,
        cache: false,
      });
      const agent = new AsyncFunctionCallingAgent({ llm, actions: [plotTool(() => [figure]), failing] });
      expect((await agent.call('Plot sales')).content).toBe('Done.');
      const messages = server.requests[1]!.body.messages;
      expect(messages.at(-1)).toEqual({
        role: 'user',
        content: [
          {
            type: 'tool_result',
            tool_use_id: 'toolu_p',
            content: [
              { type: 'text', text: `plotted sales\n[image](${figure})` },
              {
                type: 'image',
                source: { type: 'base64', media_type: 'image/png', data: PNG.toString('base64') },
              },
            ],
          },
          { type: 'tool_result', tool_use_id: 'toolu_f', content: 'the disk is full', is_error: true },
        ],
      });
    } finally {
      await server.close();
    }
  });
});
