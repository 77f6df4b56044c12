import { INTERNLM2_META, LMDeployServer, VllmModel } from 'lagent-ts';
import { startFakeOpenAIWorker } from 'lagent-ts/testing';
import { describe, expect, it } from 'vitest';

/**
 * The sync raw-prompt models: their requests run in the sync bridge's worker thread, against a fake server in
 * another worker. Worker threads: an integration test (vitest.config.ts OUT_OF_PROCESS).
 */

const dialog = [
  { role: 'system', content: 'sys' },
  { role: 'user', content: 'hi' },
];
const prompt = '<|im_start|>system\nsys<|im_end|>\n<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n';

describe('VllmModel / LMDeployServer (sync)', () => {
  it('send the same raw prompt through the bridge', () => {
    const fake = startFakeOpenAIWorker({ script: ['raw sync', 'chat sync'] });
    try {
      const vllm = new VllmModel({ model: 'm', baseURL: fake.baseURL, metaTemplate: INTERNLM2_META });
      expect(vllm.chat(dialog)).toBe('raw sync');
      const lmdeploy = new LMDeployServer({ model: 'm', baseURL: fake.baseURL });
      expect(lmdeploy.chat(dialog)).toBe('chat sync');
      const [raw, chat] = fake.requests();
      expect(raw?.body.prompt).toBe(prompt);
      expect(chat?.path).toBe('/v1/chat/completions');
    } finally {
      fake.close();
    }
  });

  it('name themselves in errors, not the async class they run on', () => {
    const fake = startFakeOpenAIWorker({ script: { status: 400, error: { message: 'no' } } });
    try {
      for (const llm of [
        new VllmModel({ model: 'm', baseURL: fake.baseURL, retry: 0 }),
        new LMDeployServer({ model: 'm', baseURL: fake.baseURL, retry: 0 }),
      ]) {
        const name = llm.constructor.name;
        expect(() => llm.chat(dialog)).toThrow(new RegExp(`^${name} request to .* failed with status 400`));
      }
      expect(() => new VllmModel({ model: '' })).toThrow(/^VllmModel needs a model name/);
    } finally {
      fake.close();
    }
  });
});
