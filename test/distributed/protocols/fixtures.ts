import type { ChatMessage, LLMCallParams, StreamChunk } from 'lagent-ts';
import {
  type AgentMessage,
  AsyncAgent,
  AsyncFunctionCallingAgent,
  AsyncStreamingFunctionCallingAgent,
  asyncTool,
  type ForwardOptions,
} from 'lagent-ts';
import { HTTPAgentServer, type HTTPAgentServerOptions } from 'lagent-ts/distributed';
import { AsyncMockLLM, type MockReply } from 'lagent-ts/testing';
import { z } from 'zod';

/*
 * The agents the protocol tests serve: a streaming function-calling assistant whose model is scripted by what
 * the user writes, and a composite whose sub-agent does the research (its own tools, one of them needing
 * approval). Only the model is scripted; tools, memory, approvals and the server are the real ones.
 */

/** What the tools did, for the tests to check what ran. */
export interface ToolLog {
  deleted: string[];
  published: string[];
  /** Resolved when the `Hang` tool starts. */
  hanging: Promise<void>;
  /** Resolved when the `Hang` tool saw its call aborted. */
  hangAborted: Promise<void>;
}

function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((done) => {
    resolve = done;
  });
  return { promise, resolve };
}

/**
 * The model of the assistant: `weather in X` calls `Weather`; `delete X` reasons, says "Let me", and calls
 * `Delete` (which needs approval); `hang` calls `Hang`; `fail` makes the model fail (and so does a tool's answer
 * that says `doom`); anything else is answered
 * `You said: ...` with reasoning. After a tool's answer, the model says what it got.
 */
function script(messages: { role: string; content?: unknown }[]): string | MockReply {
  const last = messages.at(-1)!;
  const text = String(last.content ?? '');
  if (last.role === 'tool') {
    if (text.includes('doom')) throw new Error('the model is down after the tool');
    return { content: `Done: ${text}`, reasoning: 'The tool answered.' };
  }
  if (text.startsWith('weather in ')) {
    return { toolCalls: [{ name: 'Weather', arguments: { city: text.slice('weather in '.length) } }] };
  }
  if (text.startsWith('delete ')) {
    return {
      content: 'Let me',
      reasoning: 'Deleting needs care.',
      toolCalls: [{ name: 'Delete', arguments: { path: text.slice('delete '.length) } }],
    };
  }
  if (text === 'hang') return { toolCalls: [{ name: 'Hang', arguments: {} }] };
  if (text === 'fail') throw new Error('the model is down');
  return { content: `You said: ${text}`, reasoning: 'Echoing.' };
}

/** The tools of the assistant. */
function tools(log: ToolLog, hang: { started: () => void; aborted: () => void }) {
  return [
    asyncTool({
      name: 'Weather',
      description: 'The weather in a city',
      parameters: z.object({ city: z.string() }),
      run: async ({ city }) => `sunny in ${city}`,
    }),
    asyncTool({
      name: 'Delete',
      description: 'Deletes a file',
      parameters: z.object({ path: z.string() }),
      needsApproval: true,
      run: async ({ path }) => {
        log.deleted.push(path);
        return `deleted ${path}`;
      },
    }),
    asyncTool({
      name: 'Hang',
      description: 'Waits until the call is cancelled',
      parameters: z.object({}),
      run: (_args, context) =>
        new Promise<string>((_resolve, reject) => {
          hang.started();
          context.signal?.addEventListener('abort', () => {
            hang.aborted();
            reject(context.signal!.reason);
          });
        }),
    }),
  ];
}

/**
 * The mock model with each streamed chunk on a turn of the event loop of its own, as a model's chunks come over
 * the network (a route may send what arrives in one turn together, as the A2A route does).
 */
class PacedMockLLM extends AsyncMockLLM {
  override async *streamChat(
    messages: ChatMessage[],
    params?: LLMCallParams,
  ): AsyncGenerator<StreamChunk, void, undefined> {
    for await (const chunk of super.streamChat(messages, params)) {
      await new Promise((resolve) => setImmediate(resolve));
      yield chunk;
    }
  }
}

/** A streaming function-calling assistant (chunks of 4 characters), and what its tools did. */
export function assistant(options: { streaming?: boolean; name?: string } = {}): {
  agent: AsyncStreamingFunctionCallingAgent | AsyncFunctionCallingAgent;
  log: ToolLog;
} {
  const started = deferred();
  const aborted = deferred();
  const log: ToolLog = { deleted: [], published: [], hanging: started.promise, hangAborted: aborted.promise };
  const llm = new PacedMockLLM({ responses: (messages) => script(messages), chunkSize: 4 });
  const common = {
    llm,
    actions: tools(log, { started: started.resolve, aborted: aborted.resolve }),
    name: options.name ?? 'assistant',
    description: 'An assistant with tools',
    template: 'You are helpful.',
  };
  const agent =
    options.streaming === false
      ? new AsyncFunctionCallingAgent(common)
      : new AsyncStreamingFunctionCallingAgent(common);
  return { agent, log };
}

/**
 * A composite: its forward asks its `researcher` sub-agent (a function-calling agent with `Search`, and
 * `Publish`, which needs approval) and answers with what it found.
 */
export class Desk extends AsyncAgent {
  readonly researcher: AsyncFunctionCallingAgent;

  constructor(log: ToolLog) {
    super({ name: 'desk', description: 'A research desk' });
    const llm = new AsyncMockLLM({
      responses: (messages) => {
        const last = messages.at(-1)!;
        const text = String(last.content ?? '');
        if (last.role === 'tool') return `found: ${text}`;
        if (text.startsWith('publish ')) {
          return { toolCalls: [{ name: 'Publish', arguments: { title: text.slice('publish '.length) } }] };
        }
        return { toolCalls: [{ name: 'Search', arguments: { query: text } }] };
      },
    });
    this.researcher = new AsyncFunctionCallingAgent({
      llm,
      name: 'researcher',
      description: 'Finds things out',
      actions: [
        asyncTool({
          name: 'Search',
          description: 'Searches the web',
          parameters: z.object({ query: z.string() }),
          run: async ({ query }) => `results for ${query}`,
        }),
        asyncTool({
          name: 'Publish',
          description: 'Publishes a post',
          parameters: z.object({ title: z.string() }),
          needsApproval: true,
          run: async ({ title }) => {
            log.published.push(title);
            return `published ${title}`;
          },
        }),
      ],
    });
  }

  override async forward(messages: AgentMessage[], options: ForwardOptions) {
    const found = await this.researcher.call(messages, { sessionId: options.sessionId });
    return `The desk reports: ${String(found.content)}`;
  }
}

/** A desk and what its tools did. */
export function desk(): { agent: Desk; log: ToolLog } {
  const log: ToolLog = {
    deleted: [],
    published: [],
    hanging: Promise.resolve(),
    hangAborted: Promise.resolve(),
  };
  return { agent: new Desk(log), log };
}

const servers: HTTPAgentServer[] = [];

/** An `HTTPAgentServer` on a free port (closed by {@link closeServers}). */
export async function serve(
  options: Omit<HTTPAgentServerOptions, 'port'>,
): Promise<{ server: HTTPAgentServer; url: string }> {
  const server = new HTTPAgentServer({ port: 0, exposeErrors: true, onError: () => {}, ...options });
  servers.push(server);
  return { server, url: await server.listen() };
}

/** Closes every server {@link serve} started. */
export async function closeServers(): Promise<void> {
  await Promise.all(servers.splice(0).map((server) => server.close({ timeout: 5_000 })));
}

/** The user texts and replies of a session's root memory. */
export function transcript(agent: { stateDict(id: string): unknown }, sessionId: string): string[] {
  const memory = (agent.stateDict(sessionId) as { memory?: { content: unknown }[] }).memory ?? [];
  return memory.map((message) => String(message.content));
}
