import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { AISDKModel, ModelStatusCode } from 'lagent-ts';
import { startFakeOpenAIWorker } from 'lagent-ts/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { scriptedModel } from './ai-sdk-scripted-model';

/**
 * The sync AISDKModel: the AI SDK client runs in the sync bridge's worker thread, against a fake server in
 * another worker. Worker threads: an integration test (vitest.config.ts OUT_OF_PROCESS).
 */

const user = (content: string) => [{ role: 'user', content }];

describe('AISDKModel (sync, the fake server in a worker)', () => {
  const server = startFakeOpenAIWorker({ script: ['Hello from the worker'] });
  let folder: string;
  let modelModule: string;

  beforeAll(() => {
    folder = mkdtempSync(join(tmpdir(), 'lagent-ai-sdk-'));
    modelModule = join(folder, 'model.mjs');
    const provider = import.meta.resolve('@ai-sdk/openai-compatible');
    writeFileSync(
      modelModule,
      `import { createOpenAICompatible } from ${JSON.stringify(provider)};\n` +
        `export const model = createOpenAICompatible({ name: 'fake', baseURL: ${JSON.stringify(server.baseURL)}, apiKey: 'sk', includeUsage: true }).chatModel('m-sync');\n`,
    );
  });

  afterAll(() => {
    server.close();
    rmSync(folder, { recursive: true, force: true });
  });

  it('chats, streams and counts usage through the worker, the model imported there', () => {
    const llm = new AISDKModel({
      model: { module: pathToFileURL(modelModule), exportName: 'model' },
      timeout: 5_000,
    });
    try {
      expect(llm.model).toBe('m-sync');
      expect(llm.chat(user('hi'))).toBe('Hello from the worker');
      server.setScript([{ content: 'streamed here', usage: { prompt_tokens: 2, completion_tokens: 3 } }]);
      const chunks = [...llm.streamChat(user('hi'), { sessionId: 9 })];
      expect(chunks.at(-1)).toMatchObject({ state: ModelStatusCode.END, content: 'streamed here' });
      expect(llm.getUsage(9)).toEqual({ promptTokens: 2, completionTokens: 3, totalTokens: 5 });
      expect(server.requests().map((request) => request.body.model)).toEqual(['m-sync', 'm-sync']);
    } finally {
      llm.close();
    }
  });

  it('says what it needs when given a model object', () => {
    expect(() => new AISDKModel({ model: scriptedModel([]) as never })).toThrow(
      /module exporting the AI SDK model/,
    );
  });
});
