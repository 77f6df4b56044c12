import { mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createAnthropic } from '@ai-sdk/anthropic';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import type { ChatMessage, ContentPart } from 'lagent-ts';
import {
  Agent,
  AgentMessage,
  AsyncAgent,
  AsyncAISDKModel,
  AsyncClaudeAPI,
  AsyncGPTAPI,
  AsyncOpenAIResponsesAPI,
  ValidationError,
} from 'lagent-ts';
import {
  type FakeAnthropicServer,
  type FakeOpenAIServer,
  MockLLM,
  startFakeAnthropic,
  startFakeOpenAI,
} from 'lagent-ts/testing';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { MAX_FILE_BYTES } from '#src/llms/content-inputs';

/** A 1x1 PNG. */
const PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==',
  'base64',
);
/** The smallest PDF a reader opens. */
const PDF = Buffer.from('%PDF-1.1\n1 0 obj<</Type/Catalog/Pages 2 0 R>>endobj\n%%EOF\n');
const PNG_URL = `data:image/png;base64,${PNG.toString('base64')}`;
const PDF_URL = `data:application/pdf;base64,${PDF.toString('base64')}`;

const FAST = { retry: 0, timeout: 5_000 };

let dir: string;
let openai: FakeOpenAIServer;
let anthropic: FakeAnthropicServer;
beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'lagent-parts-'));
  writeFileSync(join(dir, 'cat.png'), PNG);
  writeFileSync(join(dir, 'report.pdf'), PDF);
  symlinkSync(join(dir, 'cat.png'), join(dir, 'link.png'));
  openai = await startFakeOpenAI({ script: 'I see it.' });
  anthropic = await startFakeAnthropic({ script: 'I see it.' });
});
afterAll(async () => {
  rmSync(dir, { recursive: true, force: true });
  await openai.close();
  await anthropic.close();
});
afterEach(() => {
  openai.requests.length = 0;
  anthropic.requests.length = 0;
});

/** A user turn with a question, an image (bytes) and a PDF (a file the client may read). */
function question(): ChatMessage[] {
  const parts: ContentPart[] = [
    { type: 'text', text: 'What is in these?' },
    { type: 'image', image: new Uint8Array(PNG) },
    { type: 'file', data: join(dir, 'report.pdf'), mediaType: 'application/pdf', filename: 'report.pdf' },
  ];
  return [
    { role: 'user', content: 'What is in these?\n[image]\n[file: report.pdf (application/pdf)]', parts },
  ];
}

describe('an image and a PDF reach each provider in its own shape', () => {
  it('OpenAI chat completions: image_url and file parts', async () => {
    const llm = new AsyncGPTAPI({
      model: 'gpt-4o',
      apiKey: 'k',
      baseURL: openai.baseURL,
      allowFilePaths: [dir],
      ...FAST,
    });
    expect(await llm.chat(question())).toBe('I see it.');
    expect(openai.requests[0]!.body.messages).toEqual([
      {
        role: 'user',
        content: [
          { type: 'text', text: 'What is in these?' },
          { type: 'image_url', image_url: { url: PNG_URL } },
          { type: 'file', file: { file_data: PDF_URL, filename: 'report.pdf' } },
        ],
      },
    ]);
  });

  it('the Responses API: input_image and input_file', async () => {
    const llm = new AsyncOpenAIResponsesAPI({
      model: 'gpt-4.1',
      apiKey: 'k',
      baseURL: openai.baseURL,
      allowFilePaths: true,
      ...FAST,
    });
    expect(await llm.chat(question())).toBe('I see it.');
    expect(openai.requests[0]!.body.input).toEqual([
      {
        role: 'user',
        content: [
          { type: 'input_text', text: 'What is in these?' },
          { type: 'input_image', image_url: PNG_URL, detail: 'auto' },
          { type: 'input_file', filename: 'report.pdf', file_data: PDF_URL },
        ],
      },
    ]);
  });

  it('Anthropic: image and document blocks', async () => {
    const llm = new AsyncClaudeAPI({
      apiKey: 'k',
      baseURL: anthropic.url,
      allowFilePaths: [dir],
      cache: false,
      ...FAST,
    });
    expect(await llm.chat(question())).toBe('I see it.');
    expect(anthropic.requests[0]!.body.messages).toEqual([
      {
        role: 'user',
        content: [
          { type: 'text', text: 'What is in these?' },
          {
            type: 'image',
            source: { type: 'base64', media_type: 'image/png', data: PNG.toString('base64') },
          },
          {
            type: 'document',
            source: { type: 'base64', media_type: 'application/pdf', data: PDF.toString('base64') },
            title: 'report.pdf',
          },
        ],
      },
    ]);
  });

  it('an AI SDK model: file parts, which the provider sends in its own shape', async () => {
    const claude = new AsyncAISDKModel({
      model: createAnthropic({ baseURL: `${anthropic.url}/v1`, apiKey: 'k' })('claude-sonnet-4-5'),
      allowFilePaths: [dir],
      ...FAST,
    });
    expect(await claude.chat(question())).toBe('I see it.');
    const content = anthropic.requests[0]!.body.messages[0].content;
    expect(content[1]).toMatchObject({
      type: 'image',
      source: { type: 'base64', media_type: 'image/png', data: PNG.toString('base64') },
    });
    expect(content[2]).toMatchObject({
      type: 'document',
      source: { type: 'base64', media_type: 'application/pdf', data: PDF.toString('base64') },
    });
    const compatible = new AsyncAISDKModel({
      model: createOpenAICompatible({ name: 'fake', baseURL: openai.baseURL, apiKey: 'k' }).chatModel('m'),
      allowFilePaths: [dir],
      ...FAST,
    });
    expect(
      await compatible.chat(
        question()
          .slice(0, 1)
          .map((m) => ({ ...m, parts: m.parts!.slice(0, 2) })),
      ),
    ).toBe('I see it.');
    expect(openai.requests[0]!.body.messages[0].content[1]).toEqual({
      type: 'image_url',
      image_url: { url: PNG_URL },
    });
  });

  it('URLs are passed on as URLs, never fetched', async () => {
    const llm = new AsyncClaudeAPI({ apiKey: 'k', baseURL: anthropic.url, cache: false, ...FAST });
    await llm.chat([
      {
        role: 'user',
        content: 'see',
        parts: [
          { type: 'image', image: 'https://example.com/cat.png' },
          { type: 'file', data: new URL('https://example.com/a.pdf'), mediaType: 'application/pdf' },
        ],
      },
    ]);
    expect(anthropic.requests[0]!.body.messages[0].content).toEqual([
      { type: 'image', source: { type: 'url', url: 'https://example.com/cat.png' } },
      { type: 'document', source: { type: 'url', url: 'https://example.com/a.pdf' } },
    ]);
  });
});

describe('the limits of image and file parts', () => {
  const llm = () => new AsyncGPTAPI({ model: 'gpt-4o', apiKey: 'k', baseURL: openai.baseURL, ...FAST });
  const withPart = (part: ContentPart): ChatMessage[] => [{ role: 'user', content: 'x', parts: [part] }];

  it('refuses a file path unless the client allows it, and says how', async () => {
    const error = await llm()
      .chat(withPart({ type: 'image', image: join(dir, 'cat.png') }))
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(ValidationError);
    expect((error as Error).message).toMatch(
      /reads no local files unless its allowFilePaths option allows them/,
    );
    expect(openai.requests).toHaveLength(0);
  });

  it('refuses a path outside the allowed directories, a symbolic link, and a file that is not an image', async () => {
    const client = new AsyncGPTAPI({
      model: 'm',
      apiKey: 'k',
      baseURL: openai.baseURL,
      allowFilePaths: [dir],
      ...FAST,
    });
    await expect(client.chat(withPart({ type: 'image', image: '/etc/hostname' }))).rejects.toThrow(
      /outside the directories allowFilePaths allows/,
    );
    await expect(client.chat(withPart({ type: 'image', image: join(dir, 'link.png') }))).rejects.toThrow(
      /symbolic link/,
    );
    await expect(client.chat(withPart({ type: 'image', image: join(dir, 'report.pdf') }))).rejects.toThrow(
      /not a PNG, JPEG, GIF or WebP image/,
    );
    expect(openai.requests).toHaveLength(0);
  });

  it('refuses parts over the size limits with the sizes in the message', async () => {
    const big = new Uint8Array(MAX_FILE_BYTES + 1);
    await expect(
      llm().chat(withPart({ type: 'file', data: big, mediaType: 'application/pdf' })),
    ).rejects.toThrow(/20\.00 MB, larger than 20\.00 MB/);
    const image = new Uint8Array(4_000_000);
    image.set(PNG);
    await expect(llm().chat(withPart({ type: 'image', image }))).rejects.toThrow(/larger than 3\.75 MB/);
  });

  it('a file type Anthropic does not take is a clear error', async () => {
    const claude = new AsyncClaudeAPI({ apiKey: 'k', baseURL: anthropic.url, ...FAST });
    await expect(
      claude.chat(
        withPart({
          type: 'file',
          data: 'data:application/zip;base64,UEsDBA==',
          mediaType: 'application/zip',
        }),
      ),
    ).rejects.toThrow(/Anthropic takes PDF \(application\/pdf\) and plain-text \(text\/plain\) documents/);
  });
});

describe('content parts in agent messages', () => {
  it('reach the model as parts, and as text with notes for a model that takes text only', async () => {
    const llm = new AsyncGPTAPI({ model: 'gpt-4o', apiKey: 'k', baseURL: openai.baseURL, ...FAST });
    const agent = new AsyncAgent({ llm, template: 'Describe images.' });
    const message = new AgentMessage({
      sender: 'user',
      content: [
        { type: 'text', text: 'What is this?' },
        { type: 'image', image: PNG_URL },
      ],
    });
    expect((await agent.call(message)).content).toBe('I see it.');
    expect(openai.requests[0]!.body.messages[1]).toEqual({
      role: 'user',
      content: [
        { type: 'text', text: 'What is this?' },
        { type: 'image_url', image_url: { url: PNG_URL } },
      ],
    });
    const text = new MockLLM({ responses: ['ok'] });
    new Agent({ llm: text }).call(message);
    expect(text.calls[0]!.messages[0]!.content).toBe('What is this?\n[image]');
  });

  it("keep their bytes in a saved state as data: URLs, in lagent-ts's and Lagent's shapes", () => {
    const message = new AgentMessage({
      content: [
        { type: 'text', text: 'look' },
        { type: 'image', image: new Uint8Array(PNG) },
      ],
    });
    expect(message.toJSON().content).toEqual([
      { type: 'text', text: 'look' },
      { type: 'image', image: PNG_URL },
    ]);
    expect(AgentMessage.from(message.toJSON({ format: 'lagent' })).content).toEqual([
      { type: 'text', text: 'look' },
      { type: 'image', image: PNG_URL },
    ]);
  });

  it('are estimated for budgets: an image and a page count, not their base64 text', () => {
    const llm = new MockLLM({ responses: ['ok'] });
    const withImage = llm.countTokens([
      { role: 'user', content: 'x', parts: [{ type: 'image', image: PNG_URL }] },
    ]);
    const plain = llm.countTokens([{ role: 'user', content: 'x' }]);
    expect(withImage - plain).toBeGreaterThanOrEqual(1000);
    expect(withImage - plain).toBeLessThanOrEqual(2000);
  });
});
