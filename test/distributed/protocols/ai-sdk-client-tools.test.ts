import {
  AbstractChat,
  type ChatState,
  type ChatStatus,
  DefaultChatTransport,
  type DynamicToolUIPart,
  lastAssistantMessageIsCompleteWithToolCalls,
  type UIMessage,
} from 'ai';
import {
  AsyncStreamingFunctionCallingAgent,
  asyncTool,
  type ChatMessage,
  type OpenAITool,
  pendingInterrupts,
} from 'lagent-ts';
import { AsyncMockLLM, type MockReply } from 'lagent-ts/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { closeServers, serve, transcript } from './fixtures';

/*
 * Client-side tools over the AI SDK's UI message stream, driven by `ai@7`'s `Chat` (what `useChat` wraps): the
 * route's `clientTools` are offered to the model; a call of one ends the message with its tool part waiting;
 * `onToolCall` answers it with `addToolOutput`, and `lastAssistantMessageIsCompleteWithToolCalls` sends the
 * request that resumes the call.
 */

afterEach(closeServers);

const confirm: OpenAITool = {
  type: 'function',
  function: {
    name: 'confirm',
    description: 'Asks the user to confirm',
    parameters: { type: 'object', properties: { question: { type: 'string' } } },
  },
};

/** The model: `ask X` calls `confirm`; `plan a picnic` calls `Weather` and `confirm`; then it says what it got. */
function script(messages: ChatMessage[]): string | MockReply {
  const last = messages.at(-1)!;
  if (last.role === 'tool') {
    const results: string[] = [];
    for (let i = messages.length - 1; messages[i]!.role === 'tool'; i--)
      results.unshift(String(messages[i]!.content));
    return `Done: ${results.join(' + ')}`;
  }
  const text = String(last.content);
  if (text.startsWith('ask '))
    return { toolCalls: [{ name: 'confirm', arguments: { question: text.slice(4) } }] };
  if (text === 'plan a picnic') {
    return {
      toolCalls: [
        { name: 'Weather', arguments: { city: 'Paris' } },
        { name: 'confirm', arguments: { question: 'Paris?' } },
      ],
    };
  }
  return `You said: ${text}`;
}

function assistant() {
  const runs: string[] = [];
  const llm = new AsyncMockLLM({ responses: (messages) => script(messages), chunkSize: 4 });
  const agent = new AsyncStreamingFunctionCallingAgent({
    llm,
    name: 'assistant',
    actions: [
      asyncTool({
        name: 'Weather',
        description: 'The weather in a city',
        parameters: z.object({ city: z.string() }),
        run: async ({ city }) => {
          runs.push(city);
          return `sunny in ${city}`;
        },
      }),
    ],
  });
  return { agent, llm, runs };
}

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

/** A `Chat` whose page runs `confirm` by answering `answer`; counts the requests that finished. */
class ToolChat extends AbstractChat<UIMessage> {
  readonly asked: unknown[] = [];
  #finishes = 0;
  #waiters: { count: number; resolve: () => void }[] = [];

  constructor(url: string, id: string, answer: string) {
    super({
      id,
      transport: new DefaultChatTransport({ api: `${url}/api/chat` }),
      state: new PlainState(),
      sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithToolCalls,
      onToolCall: ({ toolCall }) => {
        if (toolCall.toolName !== 'confirm') return;
        this.asked.push(toolCall.input);
        void this.addToolOutput({ tool: 'confirm', toolCallId: toolCall.toolCallId, output: answer });
      },
      onFinish: () => this.#finished(),
      onError: () => this.#finished(),
    });
  }

  #finished(): void {
    this.#finishes++;
    for (const waiter of this.#waiters.filter((w) => w.count <= this.#finishes)) waiter.resolve();
    this.#waiters = this.#waiters.filter((w) => w.count > this.#finishes);
  }

  /** Resolves once `count` requests have finished in all. */
  finishes(count: number): Promise<void> {
    if (this.#finishes >= count) return Promise.resolve();
    return new Promise((resolve) => this.#waiters.push({ count, resolve }));
  }
}

const text = (message: UIMessage) =>
  message.parts.map((part) => (part.type === 'text' ? part.text : '')).join('');
const toolParts = (message: UIMessage) =>
  message.parts.filter((part): part is DynamicToolUIPart => part.type === 'dynamic-tool');

describe('AI SDK UI message stream: client-side tools', () => {
  it('a client tool waits for the page: addToolOutput sends the request that resumes the call', async () => {
    const { agent, llm } = assistant();
    const { url } = await serve({ agent, protocols: { 'ai-sdk': { clientTools: [confirm] } } });
    const chat = new ToolChat(url, 'page', 'yes');
    await chat.sendMessage({ text: 'ask is it ok?' });
    await chat.finishes(2);
    expect(chat.asked).toEqual([{ question: 'is it ok?' }]);
    expect(llm.calls[0]!.tools?.map((tool) => tool.function.name)).toEqual(['Weather', 'confirm']);
    expect(chat.messages).toHaveLength(2);
    const reply = chat.messages[1]!;
    expect(toolParts(reply)).toMatchObject([
      { toolName: 'confirm', state: 'output-available', output: 'yes' },
    ]);
    expect(text(reply)).toBe('Done: yes');
    expect(transcript(agent, 'page')).toEqual(['ask is it ok?', 'Done: yes']);
    expect(await pendingInterrupts(agent, 'page')).toEqual([]);
    expect(lastAssistantMessageIsCompleteWithToolCalls({ messages: chat.messages })).toBe(false);
  });

  it('with a server tool in the same turn: both wait, then the server tool runs and the model uses both', async () => {
    const { agent, runs } = assistant();
    const { url } = await serve({ agent, protocols: { 'ai-sdk': { clientTools: [confirm] } } });
    const chat = new ToolChat(url, 'picnic', 'sure');
    await chat.sendMessage({ text: 'plan a picnic' });
    await chat.finishes(2);
    expect(runs).toEqual(['Paris']);
    const reply = chat.messages.at(-1)!;
    expect(toolParts(reply).map((part) => [part.toolName, part.state, part.output])).toEqual([
      ['confirm', 'output-available', 'sure'],
      ['Weather', 'output-available', 'sunny in Paris'],
    ]);
    expect(text(reply)).toBe('Done: sunny in Paris + sure');
    // The model's answer is a step of its own: the chat sends nothing more.
    expect(lastAssistantMessageIsCompleteWithToolCalls({ messages: chat.messages })).toBe(false);
  });

  it('a client tool named like a tool of the agent fails the server at listen', async () => {
    const { agent } = assistant();
    const clash = { ...confirm, function: { ...confirm.function, name: 'Weather' } };
    await expect(serve({ agent, protocols: { 'ai-sdk': { clientTools: [clash] } } })).rejects.toThrow(
      /protocols\.ai-sdk\.clientTools: .*the client tool Weather has the name of a tool/,
    );
  });
});
