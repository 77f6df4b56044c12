import {
  AbstractChat,
  type ChatState,
  type ChatStatus,
  DefaultChatTransport,
  type DynamicToolUIPart,
  lastAssistantMessageIsCompleteWithApprovalResponses,
  readUIMessageStream,
  type UIMessage,
  type UIMessageChunk,
} from 'ai';
import { AsyncGPTAPI, AsyncStreamingAgent, AsyncStreamingFunctionCallingAgent, asyncTool } from 'lagent-ts';
import { AsyncMockLLM } from 'lagent-ts/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { type GatedModel, startGatedModel } from '../../helpers/gated-model';
import { closeServers, serve, transcript } from './fixtures';

/*
 * The AI SDK's resumable streams against the server, driven by `ai@7` itself: `POST /api/chat` runs its call as
 * a run, and `GET /api/chat/{id}/stream` (what `DefaultChatTransport.reconnectToStream` and
 * `useChat({ resume: true })` ask) serves the session's run in progress from its log. The model is a fake
 * OpenAI server whose reply goes on only when the test lets it: no clock is raced.
 */

const opened: GatedModel[] = [];
afterEach(async () => {
  await closeServers();
  for (const model of opened.splice(0)) await model.close();
});

async function gated(pieces: string[]): Promise<GatedModel> {
  const model = await startGatedModel(() => ({ content: pieces }));
  opened.push(model);
  return model;
}

function writer(model: GatedModel) {
  return new AsyncStreamingAgent({
    llm: new AsyncGPTAPI({ model: 'gated', apiKey: 'k', baseURL: model.baseURL }),
    name: 'writer',
  });
}

const user = (text: string): UIMessage => ({ id: 'u-1', role: 'user', parts: [{ type: 'text', text }] });

function textOf(message: UIMessage | undefined): string {
  return (message?.parts ?? []).map((part) => (part.type === 'text' ? part.text : '')).join('');
}

function toolParts(message: UIMessage): DynamicToolUIPart[] {
  return message.parts.filter((part): part is DynamicToolUIPart => part.type === 'dynamic-tool');
}

/** A stream's chunks and the messages they build, read as they come. */
function follow(stream: ReadableStream<UIMessageChunk>) {
  const [forChunks, forMessages] = stream.tee();
  const chunks: UIMessageChunk[] = [];
  // A client that leaves ends its stream with an AbortError: what it read so far stays.
  const chunksRead = (async () => {
    for await (const chunk of forChunks) chunks.push(structuredClone(chunk));
  })().catch(() => {});
  const messages = readUIMessageStream({ stream: forMessages })[Symbol.asyncIterator]();
  let last: UIMessage | undefined;
  return {
    chunks,
    /** Reads messages until one says `text`. */
    async until(text: string): Promise<UIMessage> {
      while (textOf(last) !== text) {
        const step = await messages.next();
        if (step.done) throw new Error(`the stream ended at ${JSON.stringify(textOf(last))}`);
        last = step.value;
      }
      return last!;
    },
    /** Reads to the end; the last message. */
    async end(): Promise<UIMessage> {
      for (let step = await messages.next(); !step.done; step = await messages.next()) last = step.value;
      await chunksRead;
      return last!;
    },
  };
}

/** A chat's state in plain fields (what `useChat` keeps in React state). */
class PlainState implements ChatState<UIMessage> {
  status: ChatStatus = 'ready';
  error: Error | undefined = undefined;
  messages: UIMessage[] = [];
  pushMessage = (message: UIMessage) => {
    this.messages = [...this.messages, message];
  };
  popMessage = () => {
    this.messages = this.messages.slice(0, -1);
  };
  replaceMessage = (index: number, message: UIMessage) => {
    this.messages = this.messages.map((old, at) => (at === index ? message : old));
  };
  snapshot = <T>(thing: T): T => structuredClone(thing);
}

/** The `Chat` that `useChat` wraps, on a chat id (a page opened, or reloaded, on it). */
class TestChat extends AbstractChat<UIMessage> {
  constructor(url: string, id: string) {
    super({
      id,
      transport: new DefaultChatTransport({ api: `${url}/api/chat` }),
      state: new PlainState(),
      sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses,
    });
  }

  get last(): UIMessage | undefined {
    return this.messages.at(-1);
  }
}

describe('AI SDK resumable streams: GET /api/chat/{id}/stream from the run log', () => {
  it('a client that leaves mid-reply comes back for the whole message; a second client joins; a finished reply is 204', async () => {
    const model = await gated(['Once ', 'upon ', 'a ', 'time.']);
    const { agent } = { agent: writer(model) };
    const { url } = await serve({ agent });
    const transport = new DefaultChatTransport({ api: `${url}/api/chat` });
    const leaving = new AbortController();
    const first = follow(
      await transport.sendMessages({
        chatId: 'story',
        messages: [user('tell a story')],
        trigger: 'submit-message',
        messageId: undefined,
        abortSignal: leaving.signal,
      }),
    );
    const partial = await first.until('Once ');
    // The page goes away mid-reply (a reload, a lost connection): the run goes on without it.
    leaving.abort();
    const request = await model.request(0);

    const back = follow((await transport.reconnectToStream({ chatId: 'story' }))!);
    // The stream starts again from the message's beginning, as the AI SDK replays a resumed stream.
    expect((await back.until('Once ')).id).toBe(partial.id);
    const joined = follow((await transport.reconnectToStream({ chatId: 'story' }))!);
    await joined.until('Once ');
    request.release(3);
    const whole = await back.end();
    expect(textOf(whole)).toBe('Once upon a time.');
    expect(whole.id).toBe(partial.id);
    expect(await joined.end()).toEqual(whole);
    expect(joined.chunks).toEqual(back.chunks);
    expect(back.chunks.map((chunk) => chunk.type)).toEqual([
      'start',
      'start-step',
      'text-start',
      ...['Once ', 'upon ', 'a ', 'time.'].map(() => 'text-delta'),
      'text-end',
      'finish',
    ]);
    // One model request, never cut: the reply was made once, whoever was watching.
    expect(model.requests).toHaveLength(1);
    expect(request.aborted).toBe(false);
    expect(transcript(agent, 'story')).toEqual(['tell a story', 'Once upon a time.']);
    // Nothing runs any more on the chat: the reconnect is answered 204, which the transport reads as no stream.
    expect(await transport.reconnectToStream({ chatId: 'story' })).toBeNull();
    expect((await fetch(`${url}/api/chat/story/stream`)).status).toBe(204);
  });

  it('useChat({ resume: true }): a chat opened again on the id picks the reply up and completes it', async () => {
    const model = await gated(['Once ', 'upon ', 'a ', 'time.']);
    const { url } = await serve({ agent: writer(model) });
    const page = new TestChat(url, 'reload');
    const sending = page.sendMessage({ text: 'tell a story' });
    const request = await model.request(0);
    await request.sentAtLeast(1);
    // The reloaded page: a new Chat on the same id, which asks for the stream in progress when it mounts.
    const reloaded = new TestChat(url, 'reload');
    const resuming = reloaded.resumeStream();
    await expect.poll(() => textOf(reloaded.last)).toBe('Once ');
    expect(reloaded.status).toBe('streaming');
    request.release(3);
    await resuming;
    await sending;
    expect(reloaded.status).toBe('ready');
    expect(reloaded.messages).toHaveLength(1);
    expect(textOf(reloaded.last)).toBe('Once upon a time.');
    expect(reloaded.last).toEqual(page.last);
    // A chat with nothing running: no stream, nothing changes.
    const idle = new TestChat(url, 'nothing-here');
    await idle.resumeStream();
    expect(idle.status).toBe('ready');
    expect(idle.messages).toEqual([]);
  });

  it('a reply resumed after an approval is served whole: the text before, the approved call, its output, the text after', async () => {
    let open!: () => void;
    const gate = new Promise<void>((resolve) => {
      open = resolve;
    });
    let deleting!: () => void;
    const deleteStarted = new Promise<void>((resolve) => {
      deleting = resolve;
    });
    const agent = new AsyncStreamingFunctionCallingAgent({
      name: 'assistant',
      llm: new AsyncMockLLM({
        responses: (messages) => {
          const last = messages.at(-1)!;
          if (last.role === 'tool') return `Done: ${String(last.content)}`;
          return { content: 'Let me', toolCalls: [{ name: 'Delete', arguments: { path: '/tmp/a' } }] };
        },
        chunkSize: 4,
      }),
      actions: [
        asyncTool({
          name: 'Delete',
          description: 'Deletes a file',
          parameters: z.object({ path: z.string() }),
          needsApproval: true,
          run: async ({ path }) => {
            deleting();
            await gate;
            return `deleted ${path}`;
          },
        }),
      ],
    });
    const { url } = await serve({ agent });
    const page = new TestChat(url, 'approval');
    await page.sendMessage({ text: 'delete /tmp/a' });
    const [waiting] = toolParts(page.last!);
    expect(waiting).toMatchObject({ state: 'approval-requested' });
    const approving = page.addToolApprovalResponse({ id: waiting!.approval!.id, approved: true });
    await deleteStarted;
    // Reloaded while the approved call runs: the reply is served from the run's first event.
    const reloaded = new TestChat(url, 'approval');
    const resuming = reloaded.resumeStream();
    // It has the message as far as the run went: the approved call, waiting for its output.
    await expect
      .poll(() => reloaded.last && toolParts(reloaded.last)[0])
      .toMatchObject({ state: 'approval-responded', approval: { approved: true } });
    expect(textOf(reloaded.last)).toBe('Let me');
    open();
    await resuming;
    await approving;
    await expect.poll(() => page.status).toBe('ready');
    // The replayed message is complete: it sends nothing more (its approval was answered).
    expect(reloaded.status).toBe('ready');
    expect(textOf(reloaded.last)).toBe('Let meDone: deleted /tmp/a');
    expect(toolParts(reloaded.last!)[0]).toMatchObject({
      toolName: 'Delete',
      state: 'output-available',
      input: { path: '/tmp/a' },
      output: 'deleted /tmp/a',
      approval: { id: waiting!.approval!.id, approved: true },
    });
    expect(reloaded.last!.id).toBe(page.last!.id);
    expect(textOf(page.last)).toBe('Let meDone: deleted /tmp/a');
    expect(reloaded.messages).toHaveLength(1);
  });

  it('with abortOnDisconnect: true a client that leaves cancels the run (the model request is cut): nothing to resume', async () => {
    const model = await gated(['Once ', 'upon ', 'a ', 'time.']);
    const { url } = await serve({ agent: writer(model), abortOnDisconnect: true });
    const transport = new DefaultChatTransport({ api: `${url}/api/chat` });
    const leaving = new AbortController();
    const first = follow(
      await transport.sendMessages({
        chatId: 'gone',
        messages: [user('tell a story')],
        trigger: 'submit-message',
        messageId: undefined,
        abortSignal: leaving.signal,
      }),
    );
    const partial = await first.until('Once ');
    leaving.abort();
    await (await model.request(0)).closed;
    await expect
      .poll(
        async () => ((await (await fetch(`${url}/runs/${partial.id}`)).json()) as { status: string }).status,
      )
      .toBe('cancelled');
    expect(await transport.reconnectToStream({ chatId: 'gone' })).toBeNull();
  });
});

describe('AI SDK streams read back from the run log', () => {
  it("keep a streaming model's reasoning as it came, and a tool that failed as an output error", async () => {
    const agent = new AsyncStreamingFunctionCallingAgent({
      name: 'assistant',
      llm: new AsyncMockLLM({
        responses: (messages) =>
          messages.at(-1)!.role === 'tool'
            ? { content: 'The disk is broken.', reasoning: 'The tool failed.' }
            : {
                reasoning: 'Reading needs the disk.',
                toolCalls: [{ name: 'Read', arguments: { path: '/x' } }],
              },
        chunkSize: 4,
      }),
      actions: [
        asyncTool({
          name: 'Read',
          description: 'Reads a file',
          parameters: z.object({ path: z.string() }),
          run: async () => {
            throw new Error('the disk is gone');
          },
        }),
      ],
    });
    const { url } = await serve({ agent });
    const chat = new TestChat(url, 'failing-tool');
    await chat.sendMessage({ text: 'read /x' });
    const reply = chat.last!;
    expect(reply.parts.filter((part) => part.type === 'reasoning').map((part) => part.text)).toEqual([
      'Reading needs the disk.',
      'The tool failed.',
    ]);
    expect(toolParts(reply)[0]).toMatchObject({
      toolName: 'Read',
      state: 'output-error',
      input: { path: '/x' },
      errorText: expect.stringMatching(/the disk is gone/),
    });
    expect(textOf(reply)).toBe('The disk is broken.');
  });
});

describe('AI SDK resumable streams: bad input', () => {
  it('unknown chats are 204; an id past the limit is 400; the token is required; a session token reaches its own chat only', async () => {
    const model = await gated(['Hello ', 'there.']);
    const { server, url } = await serve({ agent: writer(model), token: 'secret' });
    const bearer = { authorization: 'Bearer secret' };
    const get = async (id: string, headers: Record<string, string> = bearer) =>
      (await fetch(`${url}/api/chat/${encodeURIComponent(id)}/stream`, { headers })).status;
    expect(await get('never-used')).toBe(204);
    expect(await get('x'.repeat(5_000))).toBe(400);
    expect(await get('never-used', {})).toBe(401);
    expect(await get('never-used', { authorization: 'Bearer wrong' })).toBe(401);
    const alice = { authorization: `Bearer ${server.sessionToken('alice')}` };
    expect(await get('bob', alice)).toBe(403);
    expect(await get('alice', alice)).toBe(204);

    // A session token starts and follows its own chat's reply, and no other's.
    const post = (id: string, headers: Record<string, string>) =>
      fetch(`${url}/api/chat`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...headers },
        body: JSON.stringify({ id, messages: [user('hi')], trigger: 'submit-message' }),
      });
    expect((await post('bob', alice)).status).toBe(403);
    expect(model.requests).toHaveLength(0);
    const transport = new DefaultChatTransport({ api: `${url}/api/chat`, headers: alice });
    const started = follow(
      await transport.sendMessages({
        chatId: 'alice',
        messages: [user('hi')],
        trigger: 'submit-message',
        messageId: undefined,
        abortSignal: undefined,
      }),
    );
    await started.until('Hello ');
    const back = follow((await transport.reconnectToStream({ chatId: 'alice' }))!);
    expect(await get('alice', { authorization: `Bearer ${server.sessionToken('bob')}` })).toBe(403);
    (await model.request(0)).release(1);
    expect(textOf(await back.end())).toBe('Hello there.');
    expect(textOf(await started.end())).toBe('Hello there.');
  });
});
