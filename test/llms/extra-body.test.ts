import {
  AsyncClaudeAPI,
  AsyncGPTAPI,
  AsyncLMDeployServer,
  AsyncVllmModel,
  ConfigurationError,
} from 'lagent-ts';
import {
  type FakeAnthropicServer,
  type FakeOpenAIServer,
  startFakeAnthropic,
  startFakeOpenAI,
} from 'lagent-ts/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

/**
 * `extraBody` adds fields to a model request; it never replaces what the client builds itself from its own
 * options and the call: the model, the messages (or prompt, or system prompt), the tools, streaming.
 */

let openai: FakeOpenAIServer;
let anthropic: FakeAnthropicServer;
beforeAll(async () => {
  [openai, anthropic] = await Promise.all([startFakeOpenAI(), startFakeAnthropic()]);
});
afterAll(async () => {
  await Promise.all([openai?.close(), anthropic?.close()]);
});

const user = [{ role: 'user', content: 'hi' }];
const clients = {
  AsyncGPTAPI: (extraBody?: Record<string, unknown>) =>
    new AsyncGPTAPI({ model: 'operator-model', apiKey: 'sk', baseURL: openai.baseURL, retry: 0, extraBody }),
  AsyncVllmModel: (extraBody?: Record<string, unknown>) =>
    new AsyncVllmModel({ model: 'operator-model', baseURL: openai.baseURL, retry: 0, extraBody }),
  AsyncLMDeployServer: (extraBody?: Record<string, unknown>) =>
    new AsyncLMDeployServer({
      model: 'operator-model',
      baseURL: openai.baseURL,
      retry: 0,
      extraBody,
      metaTemplate: [
        { role: 'user', begin: '<u>', end: '</u>' },
        { role: 'assistant', begin: '<a>', end: '</a>' },
      ],
    }),
  AsyncClaudeAPI: (extraBody?: Record<string, unknown>) =>
    new AsyncClaudeAPI({
      model: 'operator-model',
      apiKey: 'sk',
      baseURL: anthropic.baseURL,
      retry: 0,
      extraBody,
    }),
};
const OWN_FIELDS = [
  'model',
  'messages',
  'prompt',
  'system',
  'tools',
  'tool_choice',
  'parallel_tool_calls',
  'stream',
  'stream_options',
];

describe.each(Object.entries(clients))('%s', (_name, make) => {
  const requests = () => (_name === 'AsyncClaudeAPI' ? anthropic.requests : openai.requests);

  it.each(OWN_FIELDS)('a call’s extraBody cannot replace "%s"; nothing is sent', async (field) => {
    const before = requests().length;
    const call = make().chat(user, { extraBody: { [field]: 'from the call' } });
    await expect(call).rejects.toBeInstanceOf(ConfigurationError);
    await expect(call).rejects.toThrow(new RegExp(`extraBody.*"${field}"`));
    expect(requests().length).toBe(before);
  });

  it('the client’s extraBody cannot replace them either: refused at construction', () => {
    for (const field of OWN_FIELDS) {
      expect(() => make({ [field]: 'x' }), field).toThrow(ConfigurationError);
    }
  });

  it('other fields are added, the call’s over the client’s', async () => {
    await make({ seed: 1, metadata: { a: 1 } }).chat(user, { extraBody: { seed: 2, top_k: 3 } });
    const body = requests().at(-1)!.body;
    expect(body).toMatchObject({ model: 'operator-model', seed: 2, top_k: 3, metadata: { a: 1 } });
  });
});
