import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ChatMessage, StreamChunk } from 'lagent-ts';
import {
  AsyncFunctionCallingAgent,
  AsyncGPTAPI,
  AsyncRecordingLLM,
  AsyncReplayLLM,
  AsyncStreamingAgent,
  asyncTool,
  ConfigurationError,
  LLMRequestError,
  RecordingLLM,
  ReplayLLM,
  ReplayMissError,
} from 'lagent-ts';
import { type FakeOpenAIServer, MockLLM, startFakeOpenAI } from 'lagent-ts/testing';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';

const ask = (text: string): ChatMessage[] => [{ role: 'user', content: text }];

async function collect(stream: AsyncIterable<StreamChunk>): Promise<StreamChunk[]> {
  const chunks: StreamChunk[] = [];
  for await (const chunk of stream) chunks.push(chunk);
  return chunks;
}

let server: FakeOpenAIServer;
let dir: string;
let file: string;

beforeAll(async () => {
  server = await startFakeOpenAI();
});
afterAll(async () => {
  await server.close();
});
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'lagent-record-'));
  file = join(dir, 'run.jsonl');
  let n = 0;
  server.setScript((request) => {
    const last = request.body.messages.at(-1);
    if (String(last.content).includes('FAIL'))
      return { status: 400, error: { message: 'refused by the server' } };
    if (String(last.content).includes('TOOL')) {
      return { content: 'calling', toolCalls: [{ name: 'clock', arguments: { zone: 'UTC' } }], chunkSize: 3 };
    }
    n++;
    return {
      content: `answer ${n} to ${String(last.content)}`,
      chunkSize: 3,
      usage: { prompt_tokens: 7, completion_tokens: n },
    };
  });
});
afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

const client = () => new AsyncGPTAPI({ model: 'fake', apiKey: 'sk-test', baseURL: server.baseURL, retry: 0 });
const clockTool = {
  type: 'function' as const,
  function: {
    name: 'clock',
    description: 'the time',
    parameters: { type: 'object', properties: { zone: { type: 'string' } } },
  },
};

describe('AsyncRecordingLLM and AsyncReplayLLM', () => {
  it('record a run against a server and replay it without one: text, tool calls, chunks, usage, failures', async () => {
    const recorder = new AsyncRecordingLLM(client(), { file });
    const recorded = {
      chat: await recorder.chat(ask('hello'), { sessionId: 's1' }),
      again: await recorder.chat(ask('hello'), { sessionId: 's1' }),
      generate: await recorder.generate(ask('TOOL please'), { tools: [clockTool] }),
      stream: await collect(recorder.streamChat(ask('stream me'), { temperature: 0.2 })),
      failure: (await recorder.chat(ask('FAIL')).catch((error: unknown) => error)) as LLMRequestError,
      usage: recorder.getUsage('s1'),
    };
    await recorder.flush();
    expect(recorded.again).not.toBe(recorded.chat); // the server answered twice, differently
    expect(recorded.generate.toolCalls).toEqual([
      { id: expect.any(String), name: 'clock', arguments: { zone: 'UTC' } },
    ]);
    expect(recorded.stream.length).toBeGreaterThan(3);
    expect(readFileSync(file, 'utf8').trim().split('\n')).toHaveLength(5);

    await server.close(); // nothing below reaches a server
    try {
      const replay = new AsyncReplayLLM({ file });
      expect(await replay.chat(ask('hello'), { sessionId: 's1' })).toBe(recorded.chat);
      expect(await replay.chat(ask('hello'), { sessionId: 's1' })).toBe(recorded.again); // recorded order
      expect(await replay.generate(ask('TOOL please'), { tools: [clockTool] })).toEqual(recorded.generate);
      expect(await collect(replay.streamChat(ask('stream me'), { temperature: 0.2 }))).toEqual(
        recorded.stream,
      );
      const failure = (await replay.chat(ask('FAIL')).catch((error: unknown) => error)) as LLMRequestError;
      expect(failure).toBeInstanceOf(LLMRequestError);
      expect(failure.message).toBe(recorded.failure.message);
      expect(failure.status).toBe(400);
      expect(replay.getUsage('s1')).toEqual(recorded.usage);
      expect(recorded.usage.totalTokens).toBeGreaterThan(0);
    } finally {
      server = await startFakeOpenAI();
    }
  });

  it('fails clearly on a request not recorded, showing how the closest recorded one differs', async () => {
    const recorder = new AsyncRecordingLLM(client(), { file });
    const conversation: ChatMessage[] = [
      { role: 'system', content: 'You are terse.' },
      { role: 'user', content: 'What is the capital of France?' },
    ];
    await recorder.chat(conversation);
    await recorder.chat(ask('something else entirely'));
    await recorder.flush();
    const replay = new AsyncReplayLLM({ file });
    const changed = [conversation[0]!, { role: 'user', content: 'What is the capital of Spain?' }];
    const error = (await replay.chat(changed).catch((e: unknown) => e)) as ReplayMissError;
    expect(error).toBeInstanceOf(ReplayMissError);
    expect(error.name).toBe('ReplayMissError');
    expect(error.file).toBe(file);
    expect(error.message).toContain('2 recorded requests');
    expect(error.closest).toMatch(/^message 1 \(user\) differs: recorded .*France.*, got .*Spain/);

    const params = (await replay.chat(conversation, { temperature: 0.1 }).catch((e: unknown) => e)) as Error;
    expect(params.message).toMatch(/the params differ: recorded \{\}, got \{"temperature":0\.1\}/);
    const mode = (await replay.generate(conversation).catch((e: unknown) => e)) as Error;
    expect(mode.message).toMatch(/recorded by chat\(\), asked by generate\(\)/);

    await replay.chat(conversation);
    const used = (await replay.chat(conversation).catch((e: unknown) => e)) as Error;
    expect(used).toBeInstanceOf(ReplayMissError);
    expect(used.message).toMatch(/holds this request 1 time, and every answer was used/);
  });

  it('replays an agent run: a function-calling agent and a streaming agent get the same replies', async () => {
    const clock = asyncTool({
      name: 'clock',
      description: 'the time',
      parameters: z.object({ zone: z.string() }),
      run: ({ zone }) => `noon ${zone}`,
    });
    server.setScript((request) => {
      const last = request.body.messages.at(-1);
      if (last.role === 'tool') return { content: `it is ${last.content}`, chunkSize: 2 };
      return { toolCalls: [{ name: 'clock', arguments: { zone: 'UTC' } }] };
    });
    const recorder = new AsyncRecordingLLM(client(), { file });
    const recordedReply = await new AsyncFunctionCallingAgent({ llm: recorder, actions: [clock] }).call(
      'time?',
    );
    const streamed: string[] = [];
    for await (const chunk of new AsyncStreamingAgent({ llm: recorder }).call('tell me', { sessionId: 3 }))
      streamed.push(String(chunk.content));
    await recorder.flush();

    const replay = new AsyncReplayLLM({ file });
    const replayed = await new AsyncFunctionCallingAgent({ llm: replay, actions: [clock] }).call('time?');
    expect(replayed.toJSON()).toEqual(recordedReply.toJSON());
    const again: string[] = [];
    for await (const chunk of new AsyncStreamingAgent({ llm: replay }).call('tell me', { sessionId: 3 }))
      again.push(String(chunk.content));
    expect(again).toEqual(streamed);
  });

  it('keeps models apart by label, ignores sessionId and signal in matching, and refuses a bad file', async () => {
    const a = new AsyncRecordingLLM(client(), { file, label: 'writer' });
    const b = new AsyncRecordingLLM(client(), { file, label: 'critic' });
    expect(a.model).toBe('fake'); // the wrapped model's name, for logs and traces
    const [fromA, fromB] = await Promise.all([a.chat(ask('same')), b.chat(ask('same'))]);
    await Promise.all([a.flush(), b.flush()]);
    expect(
      await new AsyncReplayLLM({ file, label: 'critic' }).chat(ask('same'), {
        sessionId: 9,
        signal: new AbortController().signal,
      }),
    ).toBe(fromB);
    expect(await new AsyncReplayLLM({ file, label: 'writer' }).chat(ask('same'))).toBe(fromA);

    expect(() => new AsyncReplayLLM({ file: join(dir, 'missing.jsonl') })).toThrow(ConfigurationError);
    writeFileSync(
      join(dir, 'bad.jsonl'),
      '{"request":{"mode":"text","messages":[],"params":{}}}\nnot json\n',
    );
    expect(() => new AsyncReplayLLM({ file: join(dir, 'bad.jsonl') })).toThrow(
      /line 2 of .*bad\.jsonl is not JSON/,
    );
  });

  it('an aborted replay rejects with the signal reason', async () => {
    const recorder = new AsyncRecordingLLM(client(), { file });
    await recorder.chat(ask('x'));
    await recorder.flush();
    const controller = new AbortController();
    controller.abort(new Error('stopped'));
    await expect(new AsyncReplayLLM({ file }).chat(ask('x'), { signal: controller.signal })).rejects.toThrow(
      'stopped',
    );
  });
});

describe('RecordingLLM and ReplayLLM (sync)', () => {
  it('wrap sync models directly and replay byte for byte', () => {
    const inner = new MockLLM({
      responses: (messages, _params, index) =>
        messages.at(-1)?.content === 'tool?'
          ? { content: '', toolCalls: [{ name: 'clock', arguments: { zone: 'UTC' } }] }
          : `reply ${index} to ${messages.at(-1)?.content}`,
      chunkSize: 3,
    });
    const recorder = new RecordingLLM(inner, { file });
    const chat = recorder.chat(ask('a'));
    const chat2 = recorder.chat(ask('a'));
    const tools = recorder.generate(ask('tool?'), { tools: [clockTool] });
    const stream = [...recorder.streamChat(ask('stream'), { stopWords: 'zz' })];
    recorder.flush();

    const replay = new ReplayLLM({ file });
    expect([replay.chat(ask('a')), replay.chat(ask('a'))]).toEqual([chat, chat2]);
    expect(replay.generate(ask('tool?'), { tools: [clockTool] })).toEqual(tools);
    expect([...replay.streamChat(ask('stream'), { stopWords: ['zz'] })]).toEqual(stream);
    expect(() => replay.chat(ask('b'))).toThrow(ReplayMissError);
  });

  it('an aborted sync replay throws the signal reason, as the async one rejects with it', () => {
    const recorder = new RecordingLLM(new MockLLM({ responses: ['x'] }), { file });
    recorder.chat(ask('x'));
    const controller = new AbortController();
    controller.abort(new Error('stopped'));
    expect(() => new ReplayLLM({ file }).chat(ask('x'), { signal: controller.signal })).toThrow('stopped');
  });
});
