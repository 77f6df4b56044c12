import type { ChatMessage } from 'lagent-ts';
import { FallbackLLM, GPTAPI } from 'lagent-ts';
import { startFakeOpenAIWorker } from 'lagent-ts/testing';
import { describe, expect, it } from 'vitest';

/**
 * FallbackLLM over sync GPTAPI clients: their requests run in the sync bridge's worker thread, against fake
 * servers in other workers. Worker threads: an integration test (vitest.config.ts OUT_OF_PROCESS).
 */

const ask = (text: string): ChatMessage[] => [{ role: 'user', content: text }];

describe('FallbackLLM through the sync bridge', () => {
  it('falls back over GPTAPI clients (the sync bridge keeps the failure retryable)', () => {
    const down = startFakeOpenAIWorker({ script: { status: 503, headers: { 'retry-after-ms': '1' } } });
    const up = startFakeOpenAIWorker({ script: 'from the sync backup' });
    const models = [down, up].map(
      (server) => new GPTAPI({ model: 'sync-model', apiKey: 'sk-test', baseURL: server.baseURL, retry: 0 }),
    );
    try {
      const llm = new FallbackLLM(models);
      expect(llm.chat(ask('x'))).toBe('from the sync backup');
      expect(llm.lastModel?.index).toBe(1);
      up.setScript({ status: 401, error: { message: 'bad key' } });
      expect(() => new FallbackLLM([models[1]!, models[0]!]).chat(ask('x'))).toThrow('bad key');
      expect(down.requests()).toHaveLength(1); // the 401 did not move on to the other model
    } finally {
      for (const model of models) model.close();
      down.close();
      up.close();
    }
  });
});
